// Channel frames: the byte format of the one host↔guest channel (spec: protocol/channel.md).
//
// Every frame is a 12-byte header {kind, flags, reserved, stream id, payload length} followed by
// at most 64 KiB of payload. FrameDecoder turns bytes (in any chunking) into frames and checks
// everything a frame can get wrong on its own: unknown kind, flags, reserved bits, a length over
// the limit, a payload size that does not fit the kind, stream 0 vs other streams. What a frame
// means for a stream (opened? credit?) is Session's job (session.h).
// Pure: no I/O, no threads; used by the server (server/channel) and the agent (guest/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "server/common/result.h"

namespace lockroom::protocol::channel {

inline constexpr std::size_t kHeaderSize = 12;
// The hard cap on one frame's payload; a side may declare a smaller one in hello.
inline constexpr std::uint32_t kMaxFramePayload = 64u << 10;
// Every side accepts frames this big; used before the hello handshake has finished.
inline constexpr std::uint32_t kMinFramePayload = 4u << 10;
// A RESET frame's payload: a 4-byte code and at most this many bytes of UTF-8 reason.
inline constexpr std::uint32_t kMaxResetReason = 256;

enum class Kind : std::uint8_t {
  kControl = 1,  // stream 0 only: a fragment of one JSON-RPC message
  kOpen = 2,     // opens a stream (empty payload)
  kData = 3,     // stream bytes, counted against the receiver's credit
  kWindow = 4,   // grants the sender more credit: u32 increment
  kClose = 5,    // half-close: the sender sends no more DATA on this stream
  kReset = 6,    // aborts the stream both ways: u32 code + reason
};
inline constexpr std::uint8_t kMaxKind = 6;

// CONTROL only: more fragments of this message follow.
inline constexpr std::uint8_t kFlagMore = 0x01;

struct FrameHeader {
  Kind kind = Kind::kControl;
  std::uint8_t flags = 0;
  std::uint32_t stream = 0;
  std::uint32_t length = 0;
};

struct Frame {
  FrameHeader header;
  std::string_view payload;  // valid only during the sink call that receives it
};

const char* kind_name(Kind kind);

// Appends one encoded frame to `out`. `payload` must be at most kMaxFramePayload bytes (a
// programmer error otherwise: asserted).
void append_frame(std::string& out, Kind kind, std::uint8_t flags, std::uint32_t stream, std::string_view payload);

// Big-endian u32 helpers for payloads (WINDOW increments, RESET codes).
void put_u32(std::string& out, std::uint32_t value);
std::uint32_t get_u32(const char* bytes);

class FrameDecoder {
 public:
  // The sink sees each complete frame in order; an error from it stops decoding and is returned.
  using Sink = std::function<Result<void>(const Frame& frame)>;

  // `max_payload` is this side's own limit (what it declared in hello), at most kMaxFramePayload.
  explicit FrameDecoder(std::uint32_t max_payload = kMaxFramePayload);

  // Consumes `bytes`. Returns the first problem found; after one, the decoder stays failed and
  // every later feed returns the same error (the stream cannot be resynchronised).
  Result<void> feed(std::string_view bytes, const Sink& sink);

  bool mid_frame() const { return have_ > 0; }
  bool failed() const { return !error_.message.empty(); }
  // Forgets any partial frame and a past failure (a new connection on the same port).
  void reset();
  std::uint32_t max_payload() const { return max_payload_; }

 private:
  Result<void> check(const FrameHeader& header) const;
  Result<void> fail(Error error);

  std::uint32_t max_payload_;
  std::string buffer_;  // one partial frame: at most kHeaderSize + max_payload_ bytes
  std::size_t have_ = 0;
  FrameHeader header_;
  bool header_done_ = false;
  Error error_;
};

// Header checks that need no stream state; exposed for tests and the fuzzer.
Result<FrameHeader> parse_header(const char* bytes, std::uint32_t max_payload);
// The checks that the first `n` (< 12) bytes of a header already allow: kind and reserved bytes.
Result<void> check_prefix(const char* bytes, std::size_t n);

}  // namespace lockroom::protocol::channel
