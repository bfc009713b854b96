// Framing: bytes from the editor in, whole JSON-RPC message texts out (and the reverse).
//
// Two framings feed one dispatcher:
//   - ContentLengthFraming: LSP's base protocol (`Content-Length: N\r\n`, optional
//     `Content-Type`, blank line, N bytes of UTF-8 JSON). Used by `lockroom serve --stdio`.
//   - NdjsonFraming: one JSON message per line. Used by the ACP face.
// Decoders accept arbitrary chunking (split reads, several messages in one read) and never
// allocate more than the bytes actually received plus the configured message limit. A framing
// problem becomes an error event; the decoder then resynchronises and keeps going.
// Pure: no I/O, called on the loop thread by the transport.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace lockroom::rpc {

inline constexpr std::size_t kDefaultMaxMessageBytes = 64u << 20;  // 64 MiB
inline constexpr std::size_t kMaxHeaderBytes = 8u << 10;           // the whole header block

struct FrameEvent {
  enum class Kind { kMessage, kError };
  Kind kind;
  std::string text;  // the message body, or the error description
};

class Framing {
 public:
  virtual ~Framing() = default;
  // Consumes `bytes`, appending complete messages and errors to `out` in arrival order.
  virtual void feed(std::string_view bytes, std::vector<FrameEvent>& out) = 0;
  // Wraps one message for the wire.
  virtual std::string encode(std::string_view message) const = 0;
  // True when bytes of an unfinished message are buffered (useful at end of input).
  virtual bool mid_message() const = 0;
};

class ContentLengthFraming final : public Framing {
 public:
  explicit ContentLengthFraming(std::size_t max_message_bytes = kDefaultMaxMessageBytes);
  void feed(std::string_view bytes, std::vector<FrameEvent>& out) override;
  std::string encode(std::string_view message) const override;
  bool mid_message() const override { return !buffer_.empty() || state_ != State::kHeader; }

 private:
  enum class State { kHeader, kBody, kSkipBody, kSkipHeader };
  // Parses a complete header block; sets body_length_ when the block names one (even if another
  // header is wrong, so the body can be skipped exactly) or returns an error.
  bool parse_header(std::string_view block, std::string& error, bool& length_known);
  void on_header(std::string_view block, std::vector<FrameEvent>& out);
  void overlong_header(std::vector<FrameEvent>& out);

  std::size_t max_message_bytes_;
  State state_ = State::kHeader;
  std::string buffer_;
  std::size_t body_length_ = 0;
  std::size_t skip_remaining_ = 0;
};

class NdjsonFraming final : public Framing {
 public:
  explicit NdjsonFraming(std::size_t max_message_bytes = kDefaultMaxMessageBytes);
  void feed(std::string_view bytes, std::vector<FrameEvent>& out) override;
  std::string encode(std::string_view message) const override;
  bool mid_message() const override { return !buffer_.empty() || skipping_; }

 private:
  std::size_t max_message_bytes_;
  std::string buffer_;
  bool skipping_ = false;  // discarding an over-long line up to its newline
};

enum class FramingKind { kContentLength, kNdjson };
std::unique_ptr<Framing> make_framing(FramingKind kind, std::size_t max_message_bytes);

}  // namespace lockroom::rpc
