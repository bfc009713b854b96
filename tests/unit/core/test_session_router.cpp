// SessionRouter (server/serve/session_router.h) with a scripted host on a real loop: events go
// to the connection that owns the sandbox; a connection that ends detaches its sandboxes, whose
// events are kept and replayed to the one that attaches them; approvals with nobody attached
// are answered "not asked" (noEditor); the grace timer destroys a detached sandbox, later when it
// holds unapplied changes; attaching stops it.
#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "server/serve/session_router.h"
#include "tests/unit/uv_test_util.h"

using namespace lockroom;
using namespace std::chrono_literals;
using serve::SessionRouter;

namespace {

// libuv times its timers with the loop's cached clock in whole milliseconds, which may lag the
// steady clock read here by up to a millisecond (and truncates), so a timer of N ms can be seen
// to fire a little under N ms after a steady_clock reading taken just before it was armed.
constexpr auto kLoopClockSlack = 2ms;

struct FakeHost final : serve::RouterHost {
  std::map<std::string, std::string> process_sandbox;
  bool changes = false;
  int change_checks = 0;
  std::vector<std::pair<std::string, std::string>> destroyed;  // sandbox, message
  std::optional<std::string> sandbox_of(const std::string& process_id) const override {
    auto it = process_sandbox.find(process_id);
    return it == process_sandbox.end() ? std::nullopt : std::optional<std::string>(it->second);
  }
  void has_unapplied_changes(const std::string&, std::function<void(bool)> done) override {
    change_checks++;
    done(changes);
  }
  void destroy_detached(const std::string& sandbox_id, const std::string& message) override { destroyed.emplace_back(sandbox_id, message); }
};

// What one connection was sent.
struct Editor final : core::SandboxEvents {
  std::vector<std::string> seen;  // "output p-1 text", "exited p-1 0", "state sb-1 gone", ...
  void state_changed(const std::string& id, core::SandboxState s, core::StopReason, const std::string&) override {
    seen.push_back("state " + id + " " + std::string(core::state_name(s)));
  }
  void process_output(const std::string& pid, core::OutputStream, const core::OutputChunk& chunk) override {
    seen.push_back("output " + pid + " " + chunk.data);
  }
  void process_exited(const std::string& pid, const core::ProcessExit& exit) override {
    seen.push_back("exited " + pid + " " + std::to_string(exit.exit_code.value_or(-1)));
  }
  int approvals = 0;
  void approve_network(const std::string&, const egress::ApprovalQuestion&, egress::ApprovalReply reply) override {
    approvals++;
    reply(egress::ApprovalAnswer::kAllowOnce);
  }
};

core::OutputChunk text(std::string s) { return core::OutputChunk{std::move(s), false}; }

// Runs the loop until `pred` holds (or the test's watchdog fires).
template <typename Pred>
void run_until(testing::TestLoop& loop, Pred pred) {
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!pred() && std::chrono::steady_clock::now() < deadline) uv_run(loop.get(), UV_RUN_ONCE);
}

}  // namespace

TEST_CASE("router: events go to the owning connection only, by sandbox and by process", "[router]") {
  testing::TestLoop loop;
  FakeHost host;
  host.process_sandbox = {{"p-1", "sb-a"}, {"p-2", "sb-b"}};
  {
    SessionRouter router(loop.get(), host, {});
    Editor one, two;
    router.add_session(1, one, "one");
    router.add_session(2, two, "two");
    REQUIRE(router.claim(1, "sb-a"));
    REQUIRE(router.claim(2, "sb-b"));
    router.process_output("p-1", core::OutputStream::kStdout, text("for one"));
    router.process_output("p-2", core::OutputStream::kStdout, text("for two"));
    router.state_changed("sb-b", core::SandboxState::kStopping, core::StopReason::kDestroyed, "");
    router.process_output("p-9", core::OutputStream::kStdout, text("nobody's"));  // unknown process: dropped
    CHECK(one.seen == std::vector<std::string>{"output p-1 for one"});
    CHECK(two.seen == std::vector<std::string>{"output p-2 for two", "state sb-b stopping"});
    CHECK(router.relation(1, "sb-a") == SessionRouter::Relation::kMine);
    CHECK(router.relation(1, "sb-b") == SessionRouter::Relation::kOther);
    CHECK(router.relation(1, "sb-new") == SessionRouter::Relation::kUnknown);
  }
  CHECK(loop.finish() == 0);
}

TEST_CASE("router: a create answered after its connection ended is not claimed", "[router]") {
  testing::TestLoop loop;
  FakeHost host;
  {
    SessionRouter router(loop.get(), host, {});
    Editor one;
    router.add_session(1, one, "one");
    router.remove_session(1);
    CHECK_FALSE(router.claim(1, "sb-a"));
    CHECK(router.relation(2, "sb-a") == SessionRouter::Relation::kUnknown);
  }
  CHECK(loop.finish() == 0);
}

TEST_CASE("router: a detached sandbox keeps its events and replays them to the connection that attaches it", "[router]") {
  testing::TestLoop loop;
  FakeHost host;
  host.process_sandbox = {{"p-1", "sb-a"}, {"p-2", "sb-a"}};
  {
    SessionRouter router(loop.get(), host, {});
    Editor one, two;
    router.add_session(1, one, "one");
    REQUIRE(router.claim(1, "sb-a"));
    router.process_started("sb-a", "p-1");
    router.process_started("sb-a", "p-2");
    router.process_output("p-1", core::OutputStream::kStdout, text("before"));
    router.remove_session(1);  // the window reloads
    CHECK(router.relation(2, "sb-a") == SessionRouter::Relation::kDetached);
    router.process_output("p-1", core::OutputStream::kStdout, text("meanwhile"));
    router.process_exited("p-2", core::ProcessExit{7, std::nullopt, core::ProcessEndReason::kNone});
    egress::ApprovalOutcome asked;
    router.approve_network("sb-a", egress::ApprovalQuestion{}, [&](egress::ApprovalOutcome o) { asked = o; });
    CHECK(asked.answer == egress::ApprovalAnswer::kNotAsked);
    CHECK(asked.why == egress::NoAnswerReason::kNoEditor);
    CHECK(one.seen == std::vector<std::string>{"output p-1 before"});

    router.add_session(2, two, "two");
    auto attached = router.attach(2, "sb-a");
    REQUIRE(attached);
    REQUIRE(attached->processes.size() == 2);
    CHECK(attached->processes[0].process_id == "p-1");
    CHECK(attached->processes[0].running);
    CHECK(attached->processes[1].process_id == "p-2");
    CHECK_FALSE(attached->processes[1].running);
    router.replay_to(2, "sb-a", std::move(attached->replay));
    router.process_output("p-1", core::OutputStream::kStdout, text("live"));
    CHECK(two.seen == std::vector<std::string>{"output p-1 meanwhile", "exited p-2 7", "output p-1 live"});
    CHECK(router.relation(2, "sb-a") == SessionRouter::Relation::kMine);
    // A second attach, by anyone, is refused.
    Editor three;
    router.add_session(3, three, "three");
    auto again = router.attach(3, "sb-a");
    REQUIRE_FALSE(again);
    CHECK(again.error().code == ErrorCode::kWrongState);
    CHECK(again.error().message.find("two") != std::string::npos);
    CHECK(router.attach(3, "sb-none").error().code == ErrorCode::kNotFound);
  }
  CHECK(loop.finish() == 0);
}

TEST_CASE("router: a detached sandbox without changes is destroyed when the grace is over", "[router]") {
  testing::TestLoop loop;
  FakeHost host;
  {
    serve::RouterOptions options;
    options.grace = 50ms;
    options.changes_grace = 10s;
    SessionRouter router(loop.get(), host, options);
    Editor one;
    router.add_session(1, one, "one");
    REQUIRE(router.claim(1, "sb-a"));
    auto detached_at = std::chrono::steady_clock::now();
    router.remove_session(1);
    run_until(loop, [&] { return !host.destroyed.empty(); });
    REQUIRE(host.destroyed.size() == 1);
    CHECK(std::chrono::steady_clock::now() - detached_at >= 50ms - kLoopClockSlack);
    CHECK(host.destroyed[0].first == "sb-a");
    CHECK(host.destroyed[0].second.find("no editor attached it") != std::string::npos);
    CHECK(host.change_checks == 1);
    CHECK(router.detached() == 0);
  }
  CHECK(loop.finish() == 0);
}

TEST_CASE("router: unapplied changes keep a detached sandbox until the longer grace", "[router]") {
  testing::TestLoop loop;
  FakeHost host;
  host.changes = true;
  {
    serve::RouterOptions options;
    options.grace = 30ms;
    options.changes_grace = 300ms;
    SessionRouter router(loop.get(), host, options);
    Editor one;
    router.add_session(1, one, "one");
    REQUIRE(router.claim(1, "sb-a"));
    auto detached_at = std::chrono::steady_clock::now();
    router.remove_session(1);
    run_until(loop, [&] { return host.change_checks == 1; });
    CHECK(host.destroyed.empty());  // the short grace is over, but it holds changes
    run_until(loop, [&] { return !host.destroyed.empty(); });
    REQUIRE(host.destroyed.size() == 1);
    CHECK(std::chrono::steady_clock::now() - detached_at >= 300ms - kLoopClockSlack);
    CHECK(host.change_checks == 1);  // asked once
  }
  CHECK(loop.finish() == 0);
}

TEST_CASE("router: attaching stops the grace timer; a sandbox that ends while detached is forgotten", "[router]") {
  testing::TestLoop loop;
  FakeHost host;
  {
    serve::RouterOptions options;
    options.grace = 50ms;
    SessionRouter router(loop.get(), host, options);
    Editor one, two;
    router.add_session(1, one, "one");
    REQUIRE(router.claim(1, "sb-a"));
    REQUIRE(router.claim(1, "sb-b"));
    router.remove_session(1);
    router.add_session(2, two, "two");
    REQUIRE(router.attach(2, "sb-a"));
    router.state_changed("sb-b", core::SandboxState::kGone, core::StopReason::kLifetimeLimit, "time is up");
    CHECK(router.detached() == 0);
    CHECK(router.relation(2, "sb-b") == SessionRouter::Relation::kUnknown);
    // Nothing fires later: wait past the grace.
    auto until = std::chrono::steady_clock::now() + 150ms;
    run_until(loop, [&] { return std::chrono::steady_clock::now() >= until; });
    CHECK(host.destroyed.empty());
    CHECK(host.change_checks == 0);
  }
  CHECK(loop.finish() == 0);
}
