// The per-user shared lockroom server: owns the sandboxes of every editor window, so that a
// window reload (or an extension host crash) ends only that window's connection.
//
// `lockroom serve --server` (started by the first `lockroom serve --stdio` bridge, bridge.h)
// listens on <server dir>/server-<version>.sock (folder 0700, socket 0600, peers checked with
// SO_PEERCRED to be this uid). Each peer first sends its hello (hello.h) and gets the welcome;
// then it is a Session (session.h) with the framing the hello named. A session that ends
// (`exit`, or the bridge's input ended) gets the end record and its sandboxes are detached
// (session_router.h). The server exits when it has had no connection and no sandbox for
// `idle_exit`, and on SIGTERM/SIGINT/SIGHUP (then every sandbox ends, reason serverShutdown, and
// the bridges see the server go). Loop thread only.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

#include "protocol/lifecycle.h"
#include "server/core/sandbox_manager.h"
#include "server/serve/session_router.h"

namespace lockroom::serve {

struct SharedServerOptions {
  std::filesystem::path dir;  // the server folder (common/paths.h's server_dir)
  std::filesystem::path log;  // where its log goes (named in the welcome)
  std::chrono::milliseconds idle_exit = std::chrono::minutes(2);
  RouterOptions router;
  bool test_mode = false;  // test/* methods on every session
};

// Runs the server until it is idle or signalled; returns the process exit code.
int run_shared_server(const SharedServerOptions& options, core::ManagerConfig config, protocol::ServerInfo info);

}  // namespace lockroom::serve
