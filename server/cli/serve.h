// `lockroom serve`: the editor-facing JSON-RPC server on stdio.
#pragma once

#include <cstddef>
#include <string>

#include "server/rpc/framing.h"

namespace lockroom::cli {

struct ServeOptions {
  rpc::FramingKind framing = rpc::FramingKind::kContentLength;
  std::size_t max_message_bytes = rpc::kDefaultMaxMessageBytes;
  bool test_mode = false;
  std::string input_mirror;  // --input-mirror: copy the raw input to this file
};

// Runs until `exit`, end of input, or SIGTERM/SIGINT; returns the process exit code.
int run_serve(const ServeOptions& options, const std::string& version);

}  // namespace lockroom::cli
