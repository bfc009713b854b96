// The Catch2 runner for lockroom's unit tests. The server's log goes nowhere here: tests assert
// on what the code returns and sends, not on what it prints.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <spdlog/spdlog.h>

namespace {
struct QuietLog {
  QuietLog() { spdlog::set_level(spdlog::level::off); }
} quiet_log;
}  // namespace
