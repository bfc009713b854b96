// LyingAgent: a scripted stand-in for lockroom-agent that can break every rule of the channel.
//
// It sits on the far end of a socketpair on the test's libuv loop. It decodes what the host
// sends (with the shared codec, leniently: it is the host that is under test), answers hello
// correctly unless told otherwise, and hands every other request to the test's script, which
// answers with the helpers below: honest replies, raw bytes, hand-made frames, or lies.
// Loop thread only.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <uv.h>

#include "protocol/channel/frame.h"
#include "protocol/channel/messages.h"
#include "protocol/channel/session.h"
#include "protocol/jsonrpc.h"
#include "server/channel/socket_stream.h"

namespace lockroom::testing {

class LyingAgent {
 public:
  using Script = std::function<void(LyingAgent& agent, const protocol::Request& request)>;

  // Takes the agent's end of a connected socket pair.
  LyingAgent(uv_loop_t* loop, int fd);
  ~LyingAgent();

  // What to do with each request; hello is answered honestly unless `on_hello` is set.
  void on_request(Script script) { script_ = std::move(script); }
  void on_hello(Script script) { hello_ = std::move(script); }

  // Honest helpers.
  void reply(const protocol::Id& id, const protocol::json& result);
  void reply_error(const protocol::Id& id, int code, const std::string& message);
  void notify(const std::string& method, const protocol::json& params);
  std::uint32_t open_stream();  // sends OPEN with the next even id
  void send_data(std::uint32_t stream, std::string_view bytes);

  // Lies.
  void send_raw(std::string bytes);
  void send_frame(protocol::channel::Kind kind, std::uint8_t flags, std::uint32_t stream, std::string_view payload);
  void send_control_text(std::string_view text);  // any text as one control message, fragmented if long

  std::size_t requests_seen() const { return seen_.size(); }
  const std::vector<std::string>& methods_seen() const { return seen_; }
  bool host_closed() const { return host_closed_; }
  void close(std::function<void()> done) { socket_.close(std::move(done)); }

 private:
  void on_bytes(std::string_view bytes);

  lockroom::channel::SocketStream socket_;
  protocol::channel::FrameDecoder decoder_;
  std::string control_;
  Script script_;
  Script hello_;
  std::vector<std::string> seen_;
  std::uint32_t next_stream_ = 2;
  bool host_closed_ = false;
};

}  // namespace lockroom::testing
