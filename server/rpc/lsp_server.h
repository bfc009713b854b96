// LspServer: the editor face's lifecycle methods on a Connection.
//
// Handles initialize / initialized / shutdown / exit and installs the LspLifecycle gate, so
// feature handlers registered on the same dispatcher only ever run while the server is up.
// Keeps what the client declared at initialize (e.g. whether it answers network/approve).
// `initialize` advertises every request method bound on the dispatcher at that moment, except
// the lifecycle's own and test mode's test/*.
// Loop thread only.
#pragma once

#include <functional>

#include "protocol/lifecycle.h"
#include "server/rpc/connection.h"
#include "server/rpc/lsp_lifecycle.h"

namespace lockroom::rpc {

class LspServer {
 public:
  // `on_exit` runs once with the process exit code, on `exit` or when the editor goes away.
  LspServer(Connection& connection, protocol::ServerInfo info, std::function<void(int exit_code)> on_exit);

  // Call when the editor is gone: ends the server with the lifecycle's exit code.
  void editor_gone();

  const protocol::InitializeParams& client() const { return client_; }
  const LspLifecycle& lifecycle() const { return lifecycle_; }

 private:
  void end(int exit_code);
  std::vector<std::string> advertised_methods();

  Connection& connection_;
  protocol::ServerInfo info_;
  std::function<void(int)> on_exit_;
  LspLifecycle lifecycle_;
  protocol::InitializeParams client_;
  bool ended_ = false;
};

}  // namespace lockroom::rpc
