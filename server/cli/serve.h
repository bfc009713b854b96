// `lockroom serve`: the editor-facing JSON-RPC server on stdio.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>

#include "server/rpc/framing.h"

namespace lockroom::cli {

// kBridge (the default): stdio pumped to the per-user shared server, started when absent;
// kStandalone (--standalone, and --test-mode unless --shared): everything in this process, end
// of stdin ends it; kServer (--server): the shared server itself (server/serve/shared_server.h).
enum class ServeMode { kBridge, kStandalone, kServer };

struct ServeOptions {
  rpc::FramingKind framing = rpc::FramingKind::kContentLength;
  std::size_t max_message_bytes = rpc::kDefaultMaxMessageBytes;
  bool test_mode = false;
  std::string input_mirror;  // --input-mirror: copy the raw input to this file
  ServeMode mode = ServeMode::kStandalone;
  std::filesystem::path server_dir;  // empty: common/paths.h's server_dir
  std::chrono::milliseconds detached_grace = std::chrono::minutes(15);
  std::chrono::milliseconds detached_changes_grace = std::chrono::hours(24);
  std::chrono::milliseconds idle_exit = std::chrono::minutes(2);
  std::string log_level = "info";  // passed on to a server the bridge starts
  std::filesystem::path log_file;   // the server's --log-file, if any
};

// Runs until `exit`, end of input, or SIGTERM/SIGINT; returns the process exit code.
int run_serve(const ServeOptions& options, const std::string& version);

}  // namespace lockroom::cli
