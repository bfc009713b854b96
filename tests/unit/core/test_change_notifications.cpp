// The editor's change notifications without a guest: changes/changed (ChangeNotice on a real loop:
// debounced, the last change always told, the version only growing), network/policyChanged and
// process/started as protocol/sandboxes.md and network.md show them through SandboxMethods on a
// real Connection, and ProcessWatch holding a sandbox's process events until its create answered.
#include <catch2/catch.hpp>

#include <chrono>
#include <vector>

#include "server/api/sandbox_methods.h"
#include "server/core/change_notice.h"
#include "server/core/process_watch.h"
#include "tests/unit/connection_harness.h"

using lockroom::protocol::json;
using namespace lockroom;
using namespace lockroom::testing;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// Runs `loop` until `until` (its watchdog fires long after).
void run_for(TestLoop& loop, std::chrono::milliseconds how_long) {
  uv_timer_t stop;
  uv_timer_init(loop.get(), &stop);
  uv_timer_start(&stop, [](uv_timer_t* t) { uv_stop(t->loop); }, static_cast<std::uint64_t>(how_long.count()), 0);
  uv_run(loop.get(), UV_RUN_DEFAULT);
  uv_close(reinterpret_cast<uv_handle_t*>(&stop), nullptr);
  uv_run(loop.get(), UV_RUN_NOWAIT);
}

// Records every event, in order, as text.
struct Recorder : core::SandboxEvents {
  std::vector<std::string> seen;
  void state_changed(const std::string& id, core::SandboxState, core::StopReason, const std::string&) override { seen.push_back("state " + id); }
  void process_output(const std::string& id, core::OutputStream, const core::OutputChunk& chunk) override {
    seen.push_back("output " + id + " " + chunk.data);
  }
  void process_bytes(const std::string& id, core::OutputStream, std::string_view bytes) override { seen.push_back("bytes " + id + " " + std::string(bytes)); }
  void process_exited(const std::string& id, const core::ProcessExit&) override { seen.push_back("exited " + id); }
  void process_started(const core::ProcessInfo& info) override { seen.push_back("started " + info.process_id); }
};

core::ProcessInfo service(const std::string& sandbox, const std::string& process) {
  core::ProcessInfo info;
  info.process_id = process;
  info.sandbox_id = sandbox;
  info.argv = {"/bin/sh", "-c", "exec redis-server"};
  info.cwd = "/";
  info.origin = core::ProcessOrigin::kKitService;
  info.name = "db";
  info.started_unix_ms = 1764488000123;
  return info;
}

}  // namespace

TEST_CASE("change notice: the first change at once, a burst folded, the last one always told, versions growing", "[core][notifications]") {
  TestLoop loop;
  std::vector<std::pair<Clock::time_point, std::uint64_t>> told;
  {
    core::ChangeNotice notice(loop.get(), [&](std::uint64_t version) { told.emplace_back(Clock::now(), version); }, 100ms);
    auto start = Clock::now();
    notice.changed();
    REQUIRE(told.size() == 1);  // leading edge: synchronously
    CHECK(told[0].second == 1);
    // A burst of 20 changes over ~300 ms.
    Clock::time_point last_change;
    for (int i = 0; i < 20; ++i) {
      notice.changed();
      last_change = Clock::now();
      run_for(loop, 15ms);
    }
    run_for(loop, 300ms);
    INFO("notices: " << told.size());
    CHECK(told.size() >= 3);
    CHECK(told.size() <= 6);  // at most one per 100 ms over ~400 ms, plus the first
    for (std::size_t i = 1; i < told.size(); ++i) {
      CHECK(told[i].second > told[i - 1].second);
      CHECK(told[i].first - told[i - 1].first >= 95ms);
    }
    CHECK(told.back().second == 21);  // the last change is told, with the latest version
    CHECK(told.back().first >= last_change);
    CHECK(notice.version() == 21);
    (void)start;
    // Destroyed with a change pending: nothing more, and the timer is freed.
    notice.changed();
    notice.changed();
  }
  auto count = told.size();
  run_for(loop, 200ms);
  CHECK(told.size() == count);
  CHECK(loop.finish() == 0);
}

TEST_CASE("sandbox events: changes/changed, network/policyChanged and process/started as the editor sees them", "[api][notifications]") {
  egress::Policy policy;
  policy.when_unmatched = egress::WhenUnmatched::kAsk;
  egress::Rule rule;
  rule.action = egress::Action::kAllow;
  rule.host.kind = egress::HostPattern::Kind::kExact;
  rule.host.name = "example.org";
  rule.ports = {egress::PortRange{80, 80}};
  rule.name = "user";
  policy.rules.push_back(rule);
  auto received = editor_receives([&](rpc::Connection& connection) {
    api::SandboxMethods methods(connection);
    methods.workspace_changed("sb-1", 7);
    methods.network_policy_changed("sb-1", policy, core::PolicyChangeCause::kApproval);
    methods.process_started(service("sb-1", "p-3"));
    core::ProcessInfo own = service("sb-1", "p-4");
    own.origin = core::ProcessOrigin::kClient;
    methods.process_started(own);  // the editor started it: not announced
    own.origin = core::ProcessOrigin::kKitSetup;
    methods.process_started(own);  // lockroom's own setup step: not announced
  });
  REQUIRE(received.size() == 3);
  CHECK(received[0].at("method") == "changes/changed");
  CHECK(received[0].at("params") == json{{"sandboxId", "sb-1"}, {"version", 7}});
  CHECK(received[1].at("method") == "network/policyChanged");
  CHECK(received[1].at("params").at("cause") == "approval");
  CHECK(received[1].at("params").at("sandboxId") == "sb-1");
  CHECK(received[1].at("params").at("policy").at("rules") ==
        json::parse(R"([{"action":"allow","host":"example.org","ports":[80],"name":"user"}])"));
  CHECK(received[1].at("params").at("policy").at("unmatched") == "ask");
  CHECK(received[2].at("method") == "process/started");
  CHECK(received[2].at("params") == json::parse(R"({"processId":"p-3","sandboxId":"sb-1","argv":["/bin/sh","-c","exec redis-server"],
      "cwd":"/","pty":false,"origin":"kitService","name":"db","startedAt":1764488000123,"running":true})"));
}

TEST_CASE("process watch: a held sandbox's process events wait for release, in order; others pass", "[core][notifications]") {
  Recorder out;
  core::ProcessWatch watch(out);
  watch.hold("sb-1");
  watch.process_started(service("sb-1", "p-3"));
  watch.process_bytes("p-3", core::OutputStream::kStdout, "ready\n");
  watch.process_output("p-3", core::OutputStream::kStdout, core::OutputChunk{"ready\n", false});
  watch.process_started(service("sb-2", "p-9"));  // another sandbox: passes
  watch.process_output("p-9", core::OutputStream::kStdout, core::OutputChunk{"other\n", false});
  watch.process_exited("p-3", core::ProcessExit{0, std::nullopt, core::ProcessEndReason::kNone});
  CHECK(out.seen == std::vector<std::string>{"started p-9", "output p-9 other\n"});
  watch.release("sb-1");
  CHECK(out.seen == std::vector<std::string>{"started p-9", "output p-9 other\n", "started p-3", "bytes p-3 ready\n", "output p-3 ready\n", "exited p-3"});
  // Released: no longer held.
  watch.process_started(service("sb-1", "p-4"));
  CHECK(out.seen.back() == "started p-4");

  SECTION("a dropped hold forgets what it held") {
    Recorder other;
    core::ProcessWatch w2(other);
    w2.hold("sb-5");
    w2.process_started(service("sb-5", "p-1"));
    w2.process_output("p-1", core::OutputStream::kStdout, core::OutputChunk{"x", false});
    w2.drop("sb-5");
    w2.process_output("p-1", core::OutputStream::kStdout, core::OutputChunk{"after", false});
    CHECK(other.seen == std::vector<std::string>{"output p-1 after"});
  }
  SECTION("what is held is bounded") {
    Recorder other;
    core::ProcessWatch w3(other);
    w3.hold("sb-6");
    w3.process_started(service("sb-6", "p-1"));
    std::string chunk(64 << 10, 'x');
    for (int i = 0; i < 40; ++i) w3.process_output("p-1", core::OutputStream::kStdout, core::OutputChunk{chunk, false});
    w3.release("sb-6");
    CHECK(other.seen.size() == 1 + core::ProcessWatch::kMaxHeldBytes / chunk.size());
  }
}
