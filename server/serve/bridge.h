// The `lockroom serve --stdio` bridge: what an editor spawns when lockroom runs shared. It
// connects to the per-user server (shared_server.h), starting it when there is none, and pumps
// the editor's bytes both ways unchanged, so the editor sees what it would see of a server of
// its own.
//
// Start-up: connect to <dir>/server-<version>.sock; when nobody answers, take <dir>/server.lock
// (flock: two bridges starting at once start one server), try again, and else start
// `lockroom serve --server` detached (its own session, stdin /dev/null, its output appended to
// the log file) and wait for its socket. Then the hello (hello.h: the framing and this process's
// environment, which is the editor's) and the welcome. Then the pump: stdin → socket, socket →
// stdout; at end of stdin the socket's write side is shut and the bridge waits for the server's
// end record, whose exit code it exits with. If the server goes away without one, the bridge
// says so on stderr and exits 1. Blocking I/O on one thread (poll); no libuv.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "server/rpc/framing.h"

namespace lockroom::serve {

struct BridgeOptions {
  std::filesystem::path dir;      // the server folder
  std::filesystem::path log;      // the log of a server this bridge starts
  std::string version;            // picks the socket (server_dir.h)
  rpc::FramingKind framing = rpc::FramingKind::kContentLength;
  std::size_t max_message_bytes = rpc::kDefaultMaxMessageBytes;
  std::vector<std::string> server_args;  // after `lockroom serve --server`, for a server it starts
  std::chrono::milliseconds start_timeout = std::chrono::seconds(30);
  int in_fd = 0;
  int out_fd = 1;
};

// Runs the bridge until the session ends; returns the process exit code.
int run_bridge(const BridgeOptions& options);

}  // namespace lockroom::serve
