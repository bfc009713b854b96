// setup_logging; see logging.h.
#include "server/cli/logging.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace lockroom::cli {

Result<void> setup_logging(const LogOptions& options) {
  auto level = spdlog::level::from_str(options.level);
  if (level == spdlog::level::off && options.level != "off")
    return make_error(ErrorCode::kInvalidInput, "unknown log level \"" + options.level +
                                                    "\"; use one of trace, debug, info, warn, error, off");
  std::vector<spdlog::sink_ptr> sinks;
  sinks.push_back(std::make_shared<spdlog::sinks::stderr_sink_mt>());
  if (!options.file.empty()) {
    try {
      sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>(options.file));
    } catch (const spdlog::spdlog_ex& e) {
      return make_error(ErrorCode::kUnavailable, "cannot open the log file " + options.file + ": " + e.what());
    }
  }
  auto logger = std::make_shared<spdlog::logger>("lockroom", sinks.begin(), sinks.end());
  logger->set_level(level);
  logger->set_pattern(options.deterministic ? "lockroom %l: %v" : "[%Y-%m-%d %H:%M:%S.%e] [%P] %l: %v");
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  return {};
}

void hold_terminal_logging(bool hold) {
  auto logger = spdlog::default_logger();
  if (!logger || logger->sinks().empty()) return;
  logger->sinks().front()->set_level(hold ? spdlog::level::warn : spdlog::level::trace);  // the first sink is stderr
}

}  // namespace lockroom::cli
