// Signal names: every Linux signal has a name on both wires and each name reads back to its number.
#include <catch2/catch.hpp>

#include <csignal>
#include <set>

#include "protocol/channel/messages.h"
#include "protocol/sandbox.h"
#include "protocol/signals.h"

using namespace lockroom::protocol;

TEST_CASE("signals: every number Linux uses has a name that reads back to it", "[protocol][signals]") {
  std::set<std::string> seen;
  for (int n = 1; n <= 64; ++n) {
    auto bare = signal_bare_name(n);
    INFO("signal " << n);
    if (n == 32) {  // the kernel's first real-time signal
      CHECK(bare == "RTMIN");
    } else if (n == 33) {
      CHECK(bare == "RTMIN+1");
    } else {
      REQUIRE(bare.has_value());
    }
    CHECK(signal_name(n) == "SIG" + *bare);
    CHECK(signal_number(signal_name(n)) == n);
    CHECK(signal_number(*bare) == n);
    CHECK(seen.insert(*bare).second);  // no two numbers share a name
  }
  CHECK(signal_name(SIGSEGV) == "SIGSEGV");
  CHECK(signal_name(SIGSYS) == "SIGSYS");
  CHECK(signal_name(SIGPWR) == "SIGPWR");
  CHECK(signal_name(SIGRTMIN + 0) == "SIG" + *signal_bare_name(SIGRTMIN));
  CHECK(signal_name(40) == "SIGRTMIN+8");
  CHECK(signal_name(99) == "SIG99");
  CHECK_FALSE(signal_bare_name(0).has_value());
  CHECK_FALSE(signal_number("SIGRTMIN+33").has_value());
  CHECK_FALSE(signal_number("RTMIN+").has_value());
  CHECK_FALSE(signal_number("RTMIN+1x").has_value());
  CHECK_FALSE(signal_number("SIG11").has_value());
  CHECK_FALSE(signal_number("").has_value());
}

TEST_CASE("signals: the channel uses the bare names of the same table", "[protocol][signals]") {
  CHECK(channel::signal_name(SIGSEGV) == "SEGV");
  CHECK(channel::signal_name(50) == "RTMIN+18");
  CHECK(channel::signal_name(99) == "99");
  CHECK(channel::signal_from_name("SIGSEGV") == SIGSEGV);
  CHECK(channel::signal_from_name("PWR") == SIGPWR);
}

TEST_CASE("signals: process/exited names the signal and gives its number", "[protocol][signals]") {
  auto exited = process_exited_json("p-1", std::nullopt, SIGSEGV);
  CHECK(exited["signal"] == "SIGSEGV");
  CHECK(exited["signalNumber"] == SIGSEGV);
  CHECK_FALSE(exited.contains("exitCode"));
  auto coded = process_exited_json("p-1", 3, std::nullopt);
  CHECK(coded["exitCode"] == 3);
  CHECK_FALSE(coded.contains("signalNumber"));
}
