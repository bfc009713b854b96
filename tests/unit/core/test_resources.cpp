// resolve_resources: defaults, every bound, and messages that name the field.
#include <catch2/catch.hpp>

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
