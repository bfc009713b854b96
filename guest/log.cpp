// The agent's log; see log.h.
#include "guest/log.h"

#include <unistd.h>

namespace lockroom::agent {

namespace {
LogLevel g_level = LogLevel::kInfo;
const char* kNames[] = {"debug", "info", "warning", "error"};
}  // namespace

void set_log_level(LogLevel level) { g_level = level; }

void log(LogLevel level, const std::string& message) {
  if (level < g_level) return;
  std::string line = "lockroom-agent: ";
  line += kNames[static_cast<int>(level)];
  line += ": ";
  line += message;
  line += '\n';
  // One write per line so lines from the agent never interleave mid-line; errors are ignored
  // (there is nowhere else to report them).
  ssize_t ignored = ::write(2, line.data(), line.size());
  (void)ignored;
}

}  // namespace lockroom::agent
