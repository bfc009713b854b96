// Limits in the agent and on the channel: limits.set with a disk limit against the real agent
// (on a host nothing is resized: "none"), limit.reached as the host reads it from a scripted
// agent (delivered when well-formed, the channel failed when not), and the agent's pure parts:
// episodes, the watch that turns observations into one notification each, and its parsers.
#include <catch2/catch.hpp>

#include <sys/socket.h>

#include "guest/disk_limit.h"
#include "guest/limit_episode.h"
#include "guest/limit_watch.h"
#include "tests/unit/channel/lying_world.h"

using namespace lockroom;
using namespace lockroom::testing;
namespace wire = lockroom::protocol::channel;
using protocol::json;
using agent::LimitEpisode;
using agent::LimitWatch;

namespace {

using Clock = std::chrono::steady_clock;

// A host GuestChannel + AgentClient facing a scripted agent that answers hello honestly.
struct Scripted : LyingWorld {
  Scripted() {
    wait_ready();
    REQUIRE(ready);
    agent_client();
  }
};

agent::DiskUsage usage(std::uint64_t size_mib, std::uint64_t used_mib, std::uint64_t available_bytes) {
  return agent::DiskUsage{size_mib << 20, used_mib << 20, available_bytes};
}

}  // namespace

TEST_CASE("agent: limits.set with a disk limit on a host is reported, not enforced", "[channel][e2e][limits]") {
  AgentHarness h;
  std::optional<Result<wire::LimitsResult>> set;
  wire::LimitsParams params;
  params.max_disk_mib = 64;
  h.client->set_limits(params, [&](Result<wire::LimitsResult> r) { set.emplace(std::move(r)); });
  REQUIRE(h.loop.run_until([&] { return set.has_value(); }));
  REQUIRE(*set);
  CHECK((*set)->max_disk_mib == 64);
  CHECK((*set)->disk_enforcement == "none");  // not PID 1: the host's own disk is never resized

  std::optional<Result<wire::LimitsResult>> refused;
  h.client->set_limits(wire::LimitsParams{std::nullopt, 0}, [&](Result<wire::LimitsResult> r) { refused.emplace(std::move(r)); });
  REQUIRE(h.loop.run_until([&] { return refused.has_value(); }));
  REQUIRE_FALSE(*refused);
  CHECK(refused->error().code == ErrorCode::kInvalidInput);
  CHECK_THAT(refused->error().message, Catch::Contains("maxDiskMiB"));
  CHECK(h.shutdown() == 0);
}

TEST_CASE("channel: limit.reached reaches the host checked", "[channel][limits]") {
  SECTION("a well-formed one is delivered") {
    Scripted t;
    std::vector<wire::LimitReached> seen;
    t.client->on_limit_reached([&](const wire::LimitReached& n) { seen.push_back(n); });
    t.agent->notify("limit.reached", json{{"limit", "processes"}, {"message", "a fork was refused"}, {"pid", 41}, {"value", 8}});
    REQUIRE(t.loop.run_until([&] { return !seen.empty() || t.failure.has_value(); }));
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].limit == wire::GuestLimit::kProcesses);
    CHECK(seen[0].pid == 41);
    CHECK(seen[0].value == 8);
    CHECK(seen[0].message == "a fork was refused");
    CHECK_FALSE(t.failure);
    CHECK(t.finish() == 0);
  }
  struct Lie {
    json params;
    const char* reason;
  };
  for (const Lie& lie : {Lie{json{{"limit", "cpu"}, {"message", "x"}}, "\"limit\" must be \"disk\", \"processes\" or \"memory\""},
                         Lie{json{{"limit", "disk"}, {"message", std::string(600, 'm')}}, "\"message\" is 600 bytes long"},
                         Lie{json{{"limit", "disk"}, {"message", "x"}, {"pid", 0}}, "pid"},
                         Lie{json{{"limit", "memory"}}, "message"}}) {
    INFO(lie.params.dump().substr(0, 80));
    Scripted t;
    bool delivered = false;
    t.client->on_limit_reached([&](const wire::LimitReached&) { delivered = true; });
    t.agent->notify("limit.reached", lie.params);
    REQUIRE(t.loop.run_until([&] { return t.failure.has_value(); }));
    CHECK_THAT(t.failure->message, Catch::Contains("limit.reached") && Catch::Contains(lie.reason));
    CHECK_FALSE(delivered);
    CHECK(t.finish() == 0);
  }
}

TEST_CASE("limit messages: limits.set and limit.reached round-trip", "[channel][limits]") {
  wire::LimitsParams p{8, 16};
  auto back = wire::parse_limits_params(wire::to_json(p));
  REQUIRE(back);
  CHECK(back->max_processes == 8);
  CHECK(back->max_disk_mib == 16);
  CHECK_FALSE(wire::parse_limits_params(json{{"maxDiskMiB", wire::kMaxDiskMibLimit + 1}}));

  wire::LimitsResult r{8, "cgroup", 16, "tmpfs"};
  auto r2 = wire::parse_limits_result(wire::to_json(r));
  REQUIRE(r2);
  CHECK(r2->max_disk_mib == 16);
  CHECK(r2->disk_enforcement == "tmpfs");
  json lie = wire::to_json(r);
  lie["diskEnforcement"] = "quota";
  CHECK_FALSE(wire::parse_limits_result(lie));

  wire::LimitReached n{wire::GuestLimit::kDisk, "full", std::nullopt, 16};
  auto n2 = wire::parse_limit_reached(wire::to_json(n));
  REQUIRE(n2);
  CHECK(n2->limit == wire::GuestLimit::kDisk);
  CHECK_FALSE(n2->pid);
  CHECK(n2->value == 16);
}

TEST_CASE("limit episodes: one report per stretch of hits", "[channel][limits]") {
  LimitEpisode e(5000ms);
  auto t0 = Clock::time_point{} + 100s;
  CHECK_FALSE(e.observe(false, t0));
  CHECK(e.observe(true, t0));             // the first hit starts an episode
  CHECK_FALSE(e.observe(true, t0 + 1s));  // hits keep it going ...
  CHECK_FALSE(e.observe(true, t0 + 5s));
  CHECK_FALSE(e.observe(false, t0 + 9s));  // ... and a quiet stretch shorter than 5 s does not end it
  CHECK_FALSE(e.observe(true, t0 + 9s));
  CHECK(e.active());
  CHECK(e.observe(true, t0 + 15s));  // 6 s without a hit: a new episode
  CHECK_FALSE(e.observe(false, t0 + 21s));
  CHECK_FALSE(e.active());
}

TEST_CASE("limit watch: a full disk, a fork bomb and OOM kills are each reported once", "[channel][limits]") {
  std::vector<wire::LimitReached> sent;
  LimitWatch w;
  w.set_notify([&](const wire::LimitReached& n) { sent.push_back(n); });
  auto t0 = Clock::time_point{} + 100s;
  const std::uint64_t base = 16ull << 20;

  // The disk: not full, then full for several looks, then freed and full again much later.
  w.disk(usage(32, 20, 12u << 20), base, 16, t0);
  CHECK(sent.empty());
  for (int i = 1; i <= 4; ++i) w.disk(usage(32, 32, 4096), base, 16, t0 + std::chrono::seconds(i));
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].limit == wire::GuestLimit::kDisk);
  CHECK(sent[0].value == 16);
  CHECK_THAT(sent[0].message, Catch::Contains("16 MiB of files") && Catch::Contains("diskMiB") && Catch::Contains("ENOSPC"));
  w.disk(usage(32, 20, 12u << 20), base, 16, t0 + 5s);
  w.disk(usage(32, 32, 0), base, 16, t0 + 20s);
  CHECK(sent.size() == 2);

  // A fork bomb: refusals on every look, one report naming the process and the limit.
  sent.clear();
  for (int i = 0; i < 10; ++i) w.forks_refused(41, 8, false, t0 + std::chrono::milliseconds(500 * i));
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].limit == wire::GuestLimit::kProcesses);
  CHECK(sent[0].pid == 41);
  CHECK(sent[0].value == 8);
  CHECK_THAT(sent[0].message, Catch::Contains("limit of 8 processes at once (maxProcesses)") && Catch::Contains("EAGAIN"));
  w.forks_refused(std::nullopt, 3, true, t0 + 30s);
  REQUIRE(sent.size() == 2);
  CHECK_THAT(sent[1].message, Catch::Contains("the process's own limit of 3"));

  // OOM kills: the first reading is the baseline; a rise is a report, further rises in the same
  // stretch are not.
  sent.clear();
  w.oom_kills(2, t0);
  CHECK(sent.empty());
  w.oom_kills(2, t0 + 1s);
  CHECK(sent.empty());
  w.oom_kills(3, t0 + 2s);
  w.oom_kills(5, t0 + 3s);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].limit == wire::GuestLimit::kMemory);
  CHECK_THAT(sent[0].message, Catch::Contains("killed 1 process "));
}

TEST_CASE("limit watch: the kernel's counters are read from their files' text", "[channel][limits]") {
  CHECK(agent::pids_events_max("max 17\n") == 17);
  CHECK(agent::pids_events_max("max 0\n") == 0);
  CHECK_FALSE(agent::pids_events_max("maximum 3\n"));
  CHECK_FALSE(agent::pids_events_max(""));
  std::string vmstat = "nr_free_pages 1000\noom_kill 4\nnr_oom_kill_x 9\n";
  CHECK(agent::vmstat_counter(vmstat, "oom_kill") == 4);
  CHECK(agent::vmstat_counter("oom_kill 12", "oom_kill") == 12);
  CHECK_FALSE(agent::vmstat_counter("nr_free_pages 1\n", "oom_kill"));
}

TEST_CASE("disk limit: the tmpfs size is the image's bytes plus the limit, in whole pages", "[channel][limits]") {
  CHECK(agent::tmpfs_size_option(0, 16) == "size=16384k");
  CHECK(agent::tmpfs_size_option(16u << 20, 16) == "size=32768k");
  CHECK(agent::tmpfs_size_option(1, 1) == "size=1028k");  // one byte more is one more page
  CHECK(agent::disk_full(usage(32, 32, 0)));
  CHECK(agent::disk_full(usage(32, 32, agent::kDiskFullBelow - 1)));
  CHECK_FALSE(agent::disk_full(usage(32, 31, agent::kDiskFullBelow)));
  CHECK_FALSE(agent::disk_full(agent::DiskUsage{}));  // no reading: not full
}
