// LockroomLink: the ACP face's connection to lockroom's editor protocol (protocol/README.md).
//
// The ACP face is an editor client like any other: it creates sandboxes, starts processes,
// reads reviews and answers network/approve through the same methods an editor extension uses,
// so everything the contract promises (kits, the egress policy, views that apply exactly what was
// shown) holds for ACP as it does for any editor. The server is either
//  - in this process (start): a ServerCore with one Session, the two talking JSON-RPC
//    (Content-Length framing) over a socketpair; the sandboxes end with this process; or
//  - the per-user shared server (connect, `lockroom acp --shared`): one of its connections, like
//    an editor window's. When this process goes, its sandboxes are detached, not destroyed, and a
//    later `lockroom acp --shared` (or any editor of the same user) can attach them.
// Loop thread only.
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
#include "server/serve/shared_connect.h"

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
  // The same through the per-user shared server, started when there is none (blocks until it
  // answers the hello).
  static Result<std::unique_ptr<LockroomLink>> connect(uv_loop_t* loop, const serve::SharedServerTarget& target,
                                                       const std::string& version, std::function<void(Result<void>)> ready);
  ~LockroomLink();
  LockroomLink(const LockroomLink&) = delete;
  LockroomLink& operator=(const LockroomLink&) = delete;

  // Whether the sandboxes live in the shared server (and outlive this process).
  bool shared() const { return !core_; }

  void call(std::string_view method, const json& params, std::chrono::milliseconds timeout, std::function<void(LinkAnswer)> done);
  void notify(std::string_view method, const json& params) { client_.notify(method, params); }
  // Notifications and requests the server sends this client (process/output, network/approve…).
  rpc::Dispatcher& incoming() { return client_.dispatcher(); }
  // Runs `fn` on the loop after `delay` (cancelled when the link goes).
  void after(std::chrono::milliseconds delay, std::function<void()> fn) { client_.scheduler().start_timer(delay, std::move(fn)); }
  // In process: ends every sandbox (reason serverShutdown), then closes both ends. Shared: closes
  // the connection (the server detaches what this client still owns). `done` runs after.
  void shutdown(std::function<void()> done);

 private:
  LockroomLink(uv_loop_t* loop, rpc::ConnectionOptions client);
  Result<void> initialize(const std::string& version, std::function<void(Result<void>)> ready);

  uv_loop_t* loop_;
  std::unique_ptr<serve::ServerCore> core_;  // in process only
  std::unique_ptr<serve::Session> session_;  // in process only
  rpc::Connection client_;
  bool shutting_down_ = false;
};

}  // namespace lockroom::acp
