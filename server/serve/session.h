// Session: one editor connection to lockroom — its Connection, its LSP lifecycle and every
// editor-facing method bound on it (sandbox/*, process/*, changes/*, workspace/*, network/*,
// kit/*, and sandbox/attach), over the shared SandboxManager.
//
// `lockroom serve --standalone` has one session on stdio; the shared server (shared_server.h)
// one per connected bridge, each over its unix socket. Either way the session's events come
// from the SessionRouter (session_router.h), which gives it the events of the sandboxes it owns.
// The session ends on `exit` or when its peer goes away (on_end gets the LSP exit code); the
// owner then closes it. A closed session must outlive the replies still being worked on for it
// (their callbacks hold its connection): the shared server keeps it a while (see there).
// Loop thread only.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include <uv.h>

#include "protocol/lifecycle.h"
#include "server/api/sandbox_methods.h"
#include "server/core/process_watch.h"
#include "server/core/sandbox_manager.h"
#include "server/rpc/connection.h"
#include "server/rpc/lsp_server.h"
#include "server/serve/session_router.h"

namespace lockroom::serve {

// What every session of a server shares.
struct SessionServices {
  uv_loop_t* loop = nullptr;
  core::SandboxManager* manager = nullptr;
  core::ProcessWatch* watch = nullptr;
  SessionRouter* router = nullptr;
  protocol::ServerInfo info;
  bool test_mode = false;
};

class Session {
 public:
  // `client_env`: the editor's environment, for secrets `from: {env}` (null: this process's).
  Session(SessionServices services, SessionId id, rpc::ConnectionOptions options,
          std::shared_ptr<const std::map<std::string, std::string>> client_env, std::string label);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Starts reading; `on_end(exit_code)` runs once, on `exit` or when the peer is gone.
  Result<void> start(std::function<void(int exit_code)> on_end);
  // Leaves the router (its sandboxes are detached), then closes the connection; `trailer` is
  // written after everything queued; `done` runs when all is closed.
  void close(std::string trailer, std::function<void()> done);

  SessionId id() const { return id_; }
  rpc::Connection& connection() { return connection_; }
  const rpc::LspServer& lsp() const { return lsp_; }
  bool closed() const { return closed_; }

 private:
  void bind_attach();

  SessionServices services_;
  SessionId id_;
  rpc::Connection connection_;
  api::SandboxMethods methods_;
  rpc::LspServer lsp_;
  std::function<void(int)> on_end_;
  std::shared_ptr<bool> connected_ = std::make_shared<bool>(true);
  bool closed_ = false;
};

}  // namespace lockroom::serve
