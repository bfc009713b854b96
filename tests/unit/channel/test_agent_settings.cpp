// The agent's settings: kernel command line words and flags.
#include <catch2/catch.hpp>

#include "guest/settings.h"

using namespace lockroom::agent;

TEST_CASE("agent settings: kernel command line", "[channel][agent]") {
  AgentSettings s;
  apply_kernel_cmdline("console=ttyS0 quiet lockroom.port=ctl lockroom.maxprocs=64 lockroom.cgroup=0 lockroom.log=debug panic=-1", s);
  CHECK(s.transport == TransportKind::kPortName);
  CHECK(s.port_name == "ctl");
  CHECK(s.max_processes == 64);
  CHECK_FALSE(s.cgroup);
  CHECK(s.log_level == LogLevel::kDebug);
  AgentSettings t;
  apply_kernel_cmdline("lockroom.maxprocs=lots lockroom.port=", t);
  CHECK_FALSE(t.max_processes);
  CHECK(t.port_name == "agent");
}

TEST_CASE("agent settings: flags win and are checked", "[channel][agent]") {
  AgentSettings s;
  apply_kernel_cmdline("lockroom.port=ctl", s);
  REQUIRE(apply_flags({"--connect", "/run/x.sock", "--no-clock", "--max-procs", "10"}, s));
  CHECK(s.transport == TransportKind::kConnect);
  CHECK(s.path == "/run/x.sock");
  CHECK_FALSE(s.set_clock);
  CHECK(s.max_processes == 10);
  REQUIRE(apply_flags({"--fd", "3"}, s));
  CHECK(s.transport == TransportKind::kFd);
  CHECK(s.fd == 3);
  auto bad = apply_flags({"--fd", "three"}, s);
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("--fd needs a descriptor number, got \"three\""));
  CHECK_FALSE(apply_flags({"--port"}, s));
  CHECK_FALSE(apply_flags({"--bogus"}, s));
}
