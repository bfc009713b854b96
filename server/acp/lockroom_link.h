// LockroomLink: the ACP face's connection to lockroom's editor protocol (protocol/README.md).
//
// The ACP face is an editor client like any other: it creates sandboxes, starts processes,
// reads reviews and answers network/approve through the same methods an editor extension uses.
// Here the server runs in this process — a ServerCore with one Session — and the two talk
// JSON-RPC (Content-Length framing) over a socketpair, so everything the contract promises
// (kits, the egress policy, views that apply exactly what was shown) holds for ACP as it does
// for any editor, and the sandboxes end with this process. Loop thread only.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <uv.h>

#include "server/core/sandbox_manager.h"
#include "server/rpc/connection.h"
#include "server/serve/server_core.h"
#include "server/serve/session.h"

namespace lockroom::acp {

using protocol::json;

// A call's answer: its result, or the error the server answered (message for the user).
struct LinkAnswer {
  json result;
  std::optional<protocol::RpcError> error;
  bool ok() const { return !error; }
};

class LockroomLink {
 public:
  // Starts the in-process server and sends `initialize` (declaring that this client answers
  // network/approve); `ready` runs once, with the error when that failed.
  static Result<std::unique_ptr<LockroomLink>> start(uv_loop_t* loop, core::ManagerConfig config, const std::string& version,
                                                     std::function<void(Result<void>)> ready);
  ~LockroomLink();
  LockroomLink(const LockroomLink&) = delete;
  LockroomLink& operator=(const LockroomLink&) = delete;

  void call(std::string_view method, const json& params, std::chrono::milliseconds timeout, std::function<void(LinkAnswer)> done);
  void notify(std::string_view method, const json& params) { client_.notify(method, params); }
  // Notifications and requests the server sends this client (process/output, network/approve…).
  rpc::Dispatcher& incoming() { return client_.dispatcher(); }
  // Ends every sandbox (reason serverShutdown), then closes both ends; `done` runs after.
  void shutdown(std::function<void()> done);

 private:
  LockroomLink(uv_loop_t* loop, core::ManagerConfig config, const std::string& version, int server_fd, int client_fd);

  uv_loop_t* loop_;
  serve::ServerCore core_;
  serve::Session session_;
  rpc::Connection client_;
  bool shutting_down_ = false;
};

}  // namespace lockroom::acp
