// Logging set-up for every subcommand: spdlog to stderr, and to a file when asked.
// stdout is never a log target: in `serve` it carries the protocol only.
#pragma once

#include <string>

#include "server/common/result.h"

namespace lockroom::cli {

struct LogOptions {
  std::string level = "info";  // trace, debug, info, warn, error, off
  std::string file;            // empty: stderr only
  bool deterministic = false;  // no timestamps or pids (test mode)
};

Result<void> setup_logging(const LogOptions& options);

}  // namespace lockroom::cli
