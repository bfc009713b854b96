// RpcServer: the agent's JSON-RPC method table for control messages from the host.
//
// Synchronous: each handler returns its result or error at once, and the reply is encoded and
// handed to `send` before the next message is read, so replies leave in request order and a
// process.start reply always precedes that process's output. Before `hello`, every other request
// gets kNotReady. Host notifications are ignored (`$/cancelRequest` has nothing to cancel: no
// request is ever pending). A handler that throws is answered with -32603; nothing escapes.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "guest/errors.h"

namespace lockroom::agent {

class RpcServer {
 public:
  using Handler = std::function<Outcome(const json& params)>;
  using Send = std::function<void(const std::string& text)>;

  explicit RpcServer(Send send) : send_(std::move(send)) {}
  void on(std::string method, Handler handler) { handlers_[std::move(method)] = std::move(handler); }
  void set_ready(bool ready) { ready_ = ready; }
  bool ready() const { return ready_; }

  void handle(std::string_view text);

 private:
  Send send_;
  std::unordered_map<std::string, Handler> handlers_;
  bool ready_ = false;
};

}  // namespace lockroom::agent
