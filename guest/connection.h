// Connection: the agent's end of the channel over its one transport descriptor.
//
// Reads bytes, decodes frames (protocol/channel/frame.h), runs them through the shared Session
// state machine, and routes what they mean: control messages to the message handler, stream
// bytes and closes to the StreamOwner that opened the stream. Owners (processes, file transfers)
// send through it within the credit the host grants. Output is buffered and written without
// blocking; when it backs up, owners are told to pause (backlogged()).
//
// A violation by the host is reported (log line + a `channel.error` notification) and then the
// connection state is dropped: the agent ignores input until the host goes away, and never exits
// because of it. Called from the agent's poll loop only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "guest/transport.h"
#include "protocol/channel/frame.h"
#include "protocol/channel/session.h"

namespace lockroom::agent {

namespace channel = protocol::channel;

// Whoever owns a stream the agent opened.
class StreamOwner {
 public:
  virtual ~StreamOwner() = default;
  virtual void on_stream_data(std::uint32_t stream, std::string_view bytes) = 0;
  virtual void on_stream_closed(std::uint32_t stream) = 0;  // the host half-closed it
  virtual void on_stream_reset(std::uint32_t stream, std::uint32_t code, std::string_view reason) = 0;
};

class Connection {
 public:
  enum class State {
    kWaiting,   // port open but no host attached: poll again later
    kActive,    // serving a host
    kDraining,  // after a host violation: discard input until the host goes away
    kClosed,    // a socket or inherited descriptor that ended: the agent is done
  };
  static constexpr std::size_t kHighWater = 1u << 20;  // owners pause above this much queued output
  static constexpr std::size_t kReadStop = 4u << 20;   // stop reading requests above this

  Connection(Transport transport, channel::Settings mine);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs for each complete control message text.
  void set_message_handler(std::function<void(std::string_view text)> fn) { on_message_ = std::move(fn); }
  // Runs when the session's state is dropped (host gone, violation, new hello): every process
  // and transfer of the old session must go.
  void set_session_lost_handler(std::function<void(const std::string& why)> fn) { on_lost_ = std::move(fn); }

  State state() const { return state_; }
  int fd() const { return transport_.fd; }
  short poll_events() const;
  // Handles poll results for the transport descriptor.
  void on_poll(short revents);
  // In kWaiting: checks whether a host has attached.
  void check_host();
  // Writes what is queued, as far as the transport takes it.
  void flush();

  channel::Session& session() { return session_; }
  Result<void> establish(const channel::Settings& host);
  // Starts a new session on the same transport (a second hello).
  void restart_session(const std::string& why);

  // --- control
  void send_message(const std::string& text);

  // --- streams (for owners)
  Result<std::uint32_t> open_stream(StreamOwner* owner);
  std::size_t credit(std::uint32_t stream) const;
  std::size_t send(std::uint32_t stream, std::string_view bytes);
  void close_stream(std::uint32_t stream);
  void reset_stream(std::uint32_t stream, std::uint32_t code, std::string_view reason);
  void consumed(std::uint32_t stream, std::size_t n) { session_.consumed(stream, n); }
  // The owner forgets the stream; later frames for it are answered or dropped by the session.
  void release(std::uint32_t stream) { owners_.erase(stream); }
  bool backlogged() const { return queued() > kHighWater; }
  std::size_t queued() const { return out_.size() - out_pos_ + session_.output_size(); }

 private:
  void read_input();
  Result<void> on_frame(const channel::Frame& frame);
  void violation(const std::string& why);
  void host_gone(const std::string& why);
  void drop_session(const std::string& why);

  Transport transport_;
  channel::Settings mine_;
  channel::FrameDecoder decoder_;
  channel::Session session_;
  std::unordered_map<std::uint32_t, StreamOwner*> owners_;
  std::function<void(std::string_view)> on_message_;
  std::function<void(const std::string&)> on_lost_;
  State state_;
  std::string out_;
  std::size_t out_pos_ = 0;
};

}  // namespace lockroom::agent
