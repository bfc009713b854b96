// The agent's log: plain lines on stderr ("lockroom-agent: ..."). In a guest, stderr is the
// serial console, which the host keeps in the sandbox's console log. Single-threaded.
#pragma once

#include <string>

namespace lockroom::agent {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

void set_log_level(LogLevel level);
void log(LogLevel level, const std::string& message);
inline void log_debug(const std::string& m) { log(LogLevel::kDebug, m); }
inline void log_info(const std::string& m) { log(LogLevel::kInfo, m); }
inline void log_warn(const std::string& m) { log(LogLevel::kWarn, m); }
inline void log_error(const std::string& m) { log(LogLevel::kError, m); }

}  // namespace lockroom::agent
