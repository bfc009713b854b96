// Session: the stream table and flow control of one end of the channel.
//
// Both ends run the same state machine. Frames from the peer go through receive(), which checks
// them against what the session knows (is the stream open? half-closed? is there credit?) and
// turns each into one Event for the application. The application's own sends (control messages,
// opening, data within credit, half-close, reset) append encoded frames to an output buffer that
// the transport drains with take_output(). Every violation by the peer comes back as an error
// whose text names the stream, the frame and the rule; the caller then drops the connection.
//
// Stream ids: the host opens odd ids, the agent even ids, each side in increasing order, so an
// id at or below the highest one opened and not in the table is known to be closed.
// Pure: no I/O, no threads. Used by server/channel and guest/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "protocol/channel/frame.h"
#include "server/common/result.h"

namespace lockroom::protocol::channel {

// Limits a side declares in hello: what it is willing to receive.
struct Settings {
  std::uint32_t max_frame = kMaxFramePayload;      // largest payload of one frame
  std::uint32_t stream_window = 256u << 10;        // initial credit per stream, both directions
  std::uint32_t max_streams = 1024;                // open streams at once (both parities together)
  std::uint32_t max_control = 1u << 20;            // largest control message (all fragments)
};

// Bounds on what a side may declare; checked by Session::establish().
inline constexpr std::uint32_t kMinWindow = 4u << 10;
inline constexpr std::uint32_t kMaxWindow = 16u << 20;
inline constexpr std::uint32_t kMaxStreamsLimit = 65536;
inline constexpr std::uint32_t kMinControl = 64u << 10;
inline constexpr std::uint32_t kMaxControl = 16u << 20;
// The largest control message anyone sends before hello has been answered.
inline constexpr std::uint32_t kHandshakeControl = 64u << 10;

enum class Side { kHost, kAgent };

// Reset codes carried in RESET frames.
namespace reset_code {
inline constexpr std::uint32_t kAck = 0;            // answer to the peer's RESET
inline constexpr std::uint32_t kCancelled = 1;      // the sender no longer wants the stream
inline constexpr std::uint32_t kProcessExited = 2;  // the process behind the stream is gone
inline constexpr std::uint32_t kIoError = 3;        // reading or writing the backing fd or file failed
inline constexpr std::uint32_t kRefused = 4;        // the stream was not expected
inline constexpr std::uint32_t kTooMuch = 5;        // a size bound was hit
}  // namespace reset_code

struct Event {
  enum class Type {
    kNone,        // nothing for the application (a control fragment, a late frame, an ack)
    kControl,     // `data` is one complete control message
    kOpened,      // the peer opened `stream`
    kData,        // `data` arrived on `stream`; report it with consumed() once it is used
    kWritable,    // the peer granted credit on `stream`
    kPeerClosed,  // the peer half-closed `stream`: no more data will come
    kReset,       // the peer reset `stream` (`code`, reason in `data`); it is gone
  };
  Type type = Type::kNone;
  std::uint32_t stream = 0;
  std::string_view data;  // valid until the next receive()
  std::uint32_t code = 0;
  bool finished = false;  // the stream is fully closed and forgotten after this event
};

class Session {
 public:
  Session(Side side, Settings mine);

  // The handshake: after it, stream frames are allowed and frames may be as big as the peer's
  // declared max_frame. Fails if `peer` is out of the protocol's bounds.
  Result<void> establish(const Settings& peer);
  bool established() const { return established_; }
  const Settings& mine() const { return mine_; }
  const Settings& peer() const { return peer_; }
  // Forgets every stream and any half-received control message (a new connection).
  void clear();

  // --- inbound
  Result<Event> receive(const Frame& frame);
  // The application has used `n` bytes received on `stream`; credit goes back when due.
  void consumed(std::uint32_t stream, std::size_t n);

  // --- outbound (frames are appended to the output buffer)
  Result<void> send_control(std::string_view message);
  Result<std::uint32_t> open_stream();
  // Bytes that may be sent on `stream` now (0 when it is not open for sending).
  std::size_t send_credit(std::uint32_t stream) const;
  // Sends at most send_credit() bytes of `bytes`; returns how many were sent.
  std::size_t send_data(std::uint32_t stream, std::string_view bytes);
  // Half-closes our direction. Returns true when the stream is now fully closed and forgotten.
  bool close_stream(std::uint32_t stream);
  // Aborts the stream; it is forgotten once the peer acknowledges.
  void reset_stream(std::uint32_t stream, std::uint32_t code, std::string_view reason);

  bool is_open(std::uint32_t stream) const;       // in the table and not being reset
  bool peer_closed(std::uint32_t stream) const;   // the peer will send no more data
  std::size_t stream_count() const { return streams_.size(); }

  std::string take_output();
  std::size_t output_size() const { return out_.size(); }

 private:
  enum class State { kOpen, kResetSent };
  struct Stream {
    State state = State::kOpen;
    bool we_closed = false;
    bool they_closed = false;
    std::uint32_t recv_credit = 0;  // what the peer may still send us
    std::uint32_t unacked = 0;      // consumed by the application, not yet granted back
    std::uint32_t send_credit = 0;  // what we may still send
  };

  bool ours(std::uint32_t stream) const;
  // Looks a stream up for an inbound frame: the entry, or null for a closed one; an error for an
  // id that was never opened.
  Result<Stream*> find_inbound(const Frame& frame);
  Result<Event> on_control(const Frame& frame);
  Result<Event> on_open(const Frame& frame);
  Result<Event> on_data(const Frame& frame, Stream& s);
  Result<Event> on_window(const Frame& frame, Stream& s);
  Result<Event> on_close(const Frame& frame, Stream& s);
  Result<Event> on_reset(const Frame& frame, Stream* s);
  void forget(std::uint32_t stream);
  std::uint32_t send_frame_limit() const;

  Side side_;
  Settings mine_;
  Settings peer_;
  bool established_ = false;
  std::unordered_map<std::uint32_t, Stream> streams_;
  std::uint32_t next_own_ = 0;        // next id we open
  std::uint32_t highest_peer_ = 0;    // highest id the peer opened
  std::string control_;               // a control message being reassembled
  bool control_pending_ = false;
  std::string out_;
};

}  // namespace lockroom::protocol::channel
