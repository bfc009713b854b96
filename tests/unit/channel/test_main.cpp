// The Catch2 runner for the channel tests. The server's log goes nowhere: tests assert on what
// the code reports, not on what it prints.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <spdlog/spdlog.h>

namespace {
struct QuietLog {
  QuietLog() { spdlog::set_level(spdlog::level::off); }
} quiet_log;
}  // namespace
