// GuestChannel: the server's end of one guest's channel, on the libuv loop.
//
// Over a connected stream socket (the guest's virtio-serial chardev), it decodes frames with
// the shared codec (protocol/channel), runs the host side of the Session (streams, credit),
// and speaks JSON-RPC on stream 0 through a Dispatcher used as a CLIENT: `call` brings the
// Dispatcher's per-call timeouts and bounded pending table. start() sends hello and reports the
// agent's answer. Other streams are opened by the agent (for process I/O, file transfers) and
// claimed by whoever asked for them with attach().
//
// The guest is hostile. Any malformed frame, size over a bound, protocol violation, request from
// the agent, reply to an id we never sent, unknown notification, or failure reported by the
// layer above (fail()) fails the channel: reading stops, every pending call and stream is told,
// on_failed runs once with the reason, and nothing of it reaches the server's other sandboxes.
// Memory per channel is bounded: one frame being decoded, one control message, one window per
// stream, and bounded queues for what the host writes.
//
// Loop thread only. Never destroy the channel inside one of its callbacks: call close() there
// (allowed anywhere) and destroy it once close's `done` has run.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <spdlog/common.h>

#include <uv.h>

#include "protocol/channel/frame.h"
#include "protocol/channel/messages.h"
#include "protocol/channel/session.h"
#include "server/channel/socket_stream.h"
#include "server/common/result.h"
#include "server/rpc/dispatcher.h"
#include "server/rpc/uv_scheduler.h"

namespace lockroom::channel {

namespace wire = protocol::channel;
using protocol::json;

struct ChannelOptions {
  wire::Settings settings{wire::kMaxFramePayload, 256u << 10, 256, 1u << 20};  // what the host accepts
  std::string host_version = "0";
  std::chrono::milliseconds hello_timeout{10000};
  std::size_t max_pending_calls = 256;
  std::size_t max_stream_queue = 1u << 20;      // host → guest bytes waiting for credit, per stream
  std::size_t max_unclaimed_bytes = 1u << 20;   // data on streams no reply has announced yet
};

struct StreamHandlers {
  std::function<void(std::string_view bytes)> on_data;
  std::function<void()> on_end;  // the agent half-closed: no more data will come
  std::function<void(std::uint32_t code, const std::string& reason)> on_reset;  // aborted, or the channel ended
  std::function<void()> on_writable;  // the write queue emptied after write() refused bytes
};

struct ChannelStats {
  std::uint64_t bytes_in = 0;
  std::uint64_t bytes_out = 0;
  std::uint64_t frames_in = 0;
  std::size_t max_held = 0;  // the most bytes held for paused streams at once
};

class GuestChannel {
 public:
  using Ready = std::function<void(Result<wire::HelloResult> hello)>;
  using Failed = std::function<void(const Error& error)>;
  using NotificationHandler = std::function<Result<void>(const json& params)>;

  GuestChannel(uv_loop_t* loop, ChannelOptions options = {});
  ~GuestChannel();
  GuestChannel(const GuestChannel&) = delete;
  GuestChannel& operator=(const GuestChannel&) = delete;

  // Takes ownership of a connected socket and says hello. `ready` runs once: with the agent's
  // hello, or with the error that failed the channel before it. `on_failed` runs once if the
  // channel fails at any time (after `ready` has reported success).
  Result<void> start(int fd, Ready ready, Failed on_failed);

  // --- control (stream 0)
  void call(std::string_view method, const json& params, std::chrono::milliseconds timeout, rpc::CallHandler done);
  // A notification the agent may send. A handler's error fails the channel with that reason.
  void on_notification(std::string method, NotificationHandler handler);

  // --- streams the agent opened
  // Claims stream `id`. Fails if the agent never opened it or it is already claimed; data that
  // arrived before is delivered at once (inside this call).
  Result<void> attach(std::uint32_t id, StreamHandlers handlers);
  // Sends bytes to the agent within the stream's credit: framed straight from `bytes` when
  // nothing waits before them, and only what the credit does not cover is copied to wait.
  // Refused whole (kLimitExceeded, nothing taken) when more than max_stream_queue bytes would
  // wait; on_writable runs once the queue has drained.
  Result<void> write(std::uint32_t id, std::string_view bytes);
  // Half-closes the host's direction once the queued bytes have gone.
  void close_stream(std::uint32_t id);
  void reset_stream(std::uint32_t id, std::uint32_t code, std::string_view reason);
  // While paused, no credit goes back to the agent and arriving bytes are held (at most one
  // window); resuming delivers them and returns the credit.
  void pause(std::uint32_t id, bool paused);
  // Forgets the handlers of a stream without telling the agent (its owner is gone). A stream
  // whose close_stream() still waits behind queued bytes keeps draining first, so an orderly
  // close is never cut short.
  void detach(std::uint32_t id);

  // --- failure and shutdown
  // Fails the channel (for the layer above: a reply that makes no sense). Idempotent.
  void fail(const std::string& reason, spdlog::level::level_enum severity = spdlog::level::warn);
  bool failed() const { return failed_; }
  bool ready() const { return session_.established(); }
  const std::string& failure() const { return failure_; }
  // Stops everything and closes the socket; `done` runs when libuv has let go of every handle.
  void close(std::function<void()> done);

  const ChannelStats& stats() const { return stats_; }
  const wire::Session& session() const { return session_; }
  std::size_t pending_calls() const { return dispatcher_.pending_calls(); }

 private:
  struct Stream {
    StreamHandlers handlers;
    bool claimed = false;
    bool paused = false;
    bool ended = false;      // the agent half-closed it before it was claimed
    std::string held;        // bytes waiting for a claim or a resume
    std::string out;         // host → agent bytes waiting for credit: out[out_at..] (sent from the front
    std::size_t out_at = 0;  //   by moving out_at; compacted when half of it is sent, never per send)
    std::size_t queued() const { return out.size() - out_at; }
    bool close_after = false;
    bool want_writable = false;
  };

  void on_bytes(std::string_view bytes);
  Result<void> on_frame(const wire::Frame& frame);
  Result<void> on_control(std::string_view text);
  Result<void> on_stream_event(const wire::Event& event);
  void deliver(std::uint32_t id, Stream& s, std::string_view bytes);
  void pump(std::uint32_t id);
  void send_control(std::string text);
  void track_outgoing(const std::string& text);
  void on_hello_reply(rpc::CallOutcome outcome);
  void flush();
  void fail_streams(const std::string& reason);
  std::size_t held_total(bool unclaimed_only) const;

  uv_loop_t* loop_;
  ChannelOptions options_;
  rpc::UvScheduler scheduler_;
  SocketStream socket_;
  wire::FrameDecoder decoder_;
  wire::Session session_;
  rpc::Dispatcher dispatcher_;
  std::unordered_map<std::string, NotificationHandler> notifications_;
  std::unordered_map<std::uint32_t, Stream> streams_;
  std::unordered_set<std::string> outstanding_;  // ids of calls the agent has yet to answer
  std::deque<std::string> timed_out_;            // recent ids given up on: late replies are ignored
  Ready ready_;
  Failed on_failed_;
  bool failed_ = false;
  bool closing_ = false;
  std::string failure_;
  ChannelStats stats_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace lockroom::channel
