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

// While a command owns the terminal (`lockroom run`), lockroom's own info and debug lines stay out
// of it: the stderr sink passes only warnings and errors until released. A --log-file still gets
// every line.
void hold_terminal_logging(bool hold);

}  // namespace lockroom::cli
