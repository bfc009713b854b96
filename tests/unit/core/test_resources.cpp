// resolve_resources: defaults, every bound, and messages that name the field.
#include <catch2/catch.hpp>

#include "protocol/channel/messages.h"
#include "server/core/resources.h"

using namespace lockroom::core;

namespace {
const HostCapacity kHost{2, 24000};
}

TEST_CASE("resources: an empty request gets the defaults", "[core][resources]") {
  auto r = resolve_resources({}, kHost);
  REQUIRE(r.ok());
  CHECK(*r == Resources{});
}

TEST_CASE("resources: accepted values are kept", "[core][resources]") {
  ResourceRequest req;
  req.cpus = 2;
  req.memory_mib = 1024;
  req.disk_mib = 64;
  req.lifetime_seconds = 30;
  req.max_processes = 10;
  req.max_output_bytes = 4096;
  auto r = resolve_resources(req, kHost);
  REQUIRE(r.ok());
  CHECK(r->cpus == 2);
  CHECK(r->memory_mib == 1024);
  CHECK(r->disk_mib == 64);
  CHECK(r->lifetime_seconds == 30);
  CHECK(r->max_processes == 10);
  CHECK(r->max_output_bytes == 4096);
}

TEST_CASE("resources: out-of-range values are refused with the field and the bound", "[core][resources]") {
  struct Case {
    ResourceRequest req;
    const char* field;
    const char* bound;
  };
  ResourceRequest cpus0, cpus3, mem_small, mem_big, disk, life0, life_big, procs, output;
  cpus0.cpus = 0;
  cpus3.cpus = 3;
  mem_small.memory_mib = 64;
  mem_big.memory_mib = 20000;
  disk.disk_mib = 1;
  life0.lifetime_seconds = 0;
  life_big.lifetime_seconds = 8 * 24 * 3600;
  procs.max_processes = 0;
  output.max_output_bytes = 10;
  for (const Case& c : {Case{cpus0, "resources.cpus = 0", "1"}, Case{cpus3, "resources.cpus = 3", "at most 2 vCPUs"},
                        Case{mem_small, "resources.memoryMiB = 64", "128"}, Case{mem_big, "resources.memoryMiB = 20000", "at most 18000 MiB"},
                        Case{disk, "resources.diskMiB = 1", "16"}, Case{life0, "resources.timeoutSeconds = 0", "1"},
                        Case{life_big, "resources.timeoutSeconds = 691200", "604800"}, Case{procs, "resources.maxProcesses = 0", "1"},
                        Case{output, "resources.maxOutputBytes = 10", "1024"}}) {
    auto r = resolve_resources(c.req, kHost);
    INFO(c.field);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == lockroom::ErrorCode::kInvalidInput);
    CHECK_THAT(r.error().message, Catch::Contains(c.field) && Catch::Contains(c.bound));
  }
}

TEST_CASE("resources: the disk is bounded by the memory it lives in", "[core][resources]") {
  ResourceRequest too_big;
  too_big.disk_mib = 1024;  // default memory: 512 MiB
  auto r = resolve_resources(too_big, kHost);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == lockroom::ErrorCode::kInvalidInput);
  CHECK_THAT(r.error().message, Catch::Contains("resources.diskMiB = 1024") && Catch::Contains("memoryMiB = 512") &&
                                    Catch::Contains("at most 416 MiB"));

  ResourceRequest fits = too_big;
  fits.memory_mib = 1024 + kGuestMemoryOverheadMib;
  auto ok = resolve_resources(fits, kHost);
  REQUIRE(ok.ok());
  CHECK(ok->disk_mib == 1024);

  ResourceRequest at_cap;
  at_cap.disk_mib = 512 - kGuestMemoryOverheadMib;
  CHECK(resolve_resources(at_cap, kHost).ok());
  at_cap.disk_mib = *at_cap.disk_mib + 1;
  CHECK_FALSE(resolve_resources(at_cap, kHost).ok());
}

TEST_CASE("resources: the default disk is half the memory, within what the memory allows", "[core][resources]") {
  for (auto [memory, disk] : {std::pair{512, 256}, std::pair{1024, 512}, std::pair{128, 32}, std::pair{160, 64}}) {
    ResourceRequest req;
    req.memory_mib = memory;
    auto r = resolve_resources(req, kHost);
    INFO("memoryMiB " << memory);
    REQUIRE(r.ok());
    CHECK(r->disk_mib == disk);
  }
}

TEST_CASE("resources: the agent is told the process and disk limits", "[core][resources]") {
  ResourceRequest req;
  req.max_processes = 8;
  req.disk_mib = 20;
  auto r = resolve_resources(req, kHost);
  REQUIRE(r.ok());
  auto params = limits_params(*r);
  CHECK(params.max_processes == 8);
  CHECK(params.max_disk_mib == 20);
}

TEST_CASE("resources: the default memory shrinks to fit a small host", "[core][resources]") {
  auto r = resolve_resources({}, HostCapacity{1, 400});
  REQUIRE(r.ok());
  CHECK(r->memory_mib == 300);
}

TEST_CASE("resources: the host probe reads real numbers", "[core][resources]") {
  HostCapacity host = probe_host_capacity();
  CHECK(host.cpus >= 1);
  CHECK(host.memory_mib >= 64);
}
