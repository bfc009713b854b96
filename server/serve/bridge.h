// The `lockroom serve --stdio` bridge: what an editor spawns when lockroom runs shared. It
// connects to the per-user server (shared_server.h), starting it when there is none, and pumps
// the editor's bytes both ways unchanged, so the editor sees what it would see of a server of
// its own.
//
// Start-up: connect_shared_server (shared_connect.h), which starts the server when there is
// none. Then the pump: stdin → socket, socket → stdout; at end of stdin the socket's write side
// is shut and the bridge waits for the server's end record, whose exit code it exits with. If
// the server goes away without one, the bridge says so on stderr and exits 1. Blocking I/O on
// one thread (poll); no libuv.
#pragma once

#include "server/serve/shared_connect.h"

namespace lockroom::serve {

struct BridgeOptions : SharedServerTarget {
  int in_fd = 0;
  int out_fd = 1;
};

// Runs the bridge until the session ends; returns the process exit code.
int run_bridge(const BridgeOptions& options);

}  // namespace lockroom::serve
