// workspace.changed end to end through the real lockroom-agent: the watch of a checked-out
// workspace tells the host when files change, debounced (at most one per gap, the last change
// always followed by one), and a manifest alone (the host looking) tells nothing, so an editor
// that lists on each notice cannot loop. A lying agent's malformed notice fails the channel; one
// for a path the host never checked out is dropped. Also the shared Debounce itself.
#include <algorithm>

#include "protocol/channel/debounce.h"
#include "tests/unit/channel/agent_workspace_world.h"
#include "tests/unit/channel/lying_world.h"

using namespace lockroom;
using namespace lockroom::testing;
using Clock = std::chrono::steady_clock;
using protocol::json;

namespace {

struct Notices {
  std::vector<std::pair<Clock::time_point, std::string>> seen;
  void attach(AgentClient& client) {
    client.on_workspace_changed([this](const std::string& path) { seen.emplace_back(Clock::now(), path); });
  }
};

// Runs the loop for `how_long`, whatever happens.
void idle(AgentHarness& h, std::chrono::milliseconds how_long) {
  auto until = Clock::now() + how_long;
  h.loop.run_until([&] { return Clock::now() >= until; }, how_long + 5s);
}

}  // namespace

TEST_CASE("agent workspace: workspace.changed tells edits, debounced, and nothing for a manifest alone", "[channel][e2e][workspace]") {
  World w;
  std::string c1 = seed(w);
  AgentHarness h;
  Notices notices;
  notices.attach(*h.client);
  REQUIRE(import(h, w.checkout(c1), w.pack(c1)));
  idle(h, 600ms);  // the first checkout is made before the watch starts: nothing to tell

  // The host looking (a whole manifest, then one since it) changes nothing: no notice.
  auto m1 = manifest(h, w);
  REQUIRE(m1);
  REQUIRE(manifest_since(h, w, m1->summary.manifest));
  notices.seen.clear();
  idle(h, 800ms);
  CHECK(notices.seen.empty());

  // One edit: told at once (the leading edge), well before the gap.
  auto wrote = Clock::now();
  write(w.ws / "a.txt", "alpha, edited\n");
  REQUIRE(h.loop.run_until([&] { return !notices.seen.empty(); }, 5s));
  CHECK(notices.seen.front().second == w.ws.string());
  CHECK(notices.seen.front().first - wrote < 200ms);
  idle(h, 600ms);
  notices.seen.clear();

  // A burst of edits for 1.2 s: a few notices, never two within the gap, the last after the last edit.
  auto burst_start = Clock::now();
  Clock::time_point last_write;
  for (int i = 0; Clock::now() - burst_start < 1200ms; ++i) {
    write(w.ws / ("burst-" + std::to_string(i % 20) + ".txt"), "edit " + std::to_string(i) + "\n");
    last_write = Clock::now();
    idle(h, 10ms);
  }
  idle(h, 800ms);
  INFO("notices during the burst: " << notices.seen.size());
  CHECK(notices.seen.size() >= 3);
  CHECK(notices.seen.size() <= 1200 / wire::kWorkspaceChangedGapMs + 3);
  for (std::size_t i = 1; i < notices.seen.size(); ++i)
    CHECK(notices.seen[i].first - notices.seen[i - 1].first >= std::chrono::milliseconds(wire::kWorkspaceChangedGapMs) - 20ms);
  REQUIRE_FALSE(notices.seen.empty());
  CHECK(notices.seen.back().first >= last_write);  // the trailing edge: the last edit is told

  CHECK_FALSE(h.failure);
  CHECK(h.shutdown() == 0);
}

TEST_CASE("lying agent: workspace.changed is checked, and dropped for a workspace never checked out", "[channel][hostile]") {
  SECTION("a path never checked out is dropped, the channel lives") {
    LyingWorld t;
    t.wait_ready();
    channel::AgentClient& client = t.agent_client();
    int told = 0;
    client.on_workspace_changed([&](const std::string&) { ++told; });
    t.agent->on_request([](LyingAgent& a, const protocol::Request& r) {
      a.notify("workspace.changed", json{{"path", "/workspace"}});
      a.reply(r.id, json{{"uptimeMs", 1}, {"load", {0, 0, 0}}, {"memory", {{"totalKiB", 1}, {"availableKiB", 1}}}, {"processes", 0}, {"streams", 0}});
    });
    std::optional<Result<wire::HealthResult>> health;
    client.health([&](Result<wire::HealthResult> r) { health.emplace(std::move(r)); });
    REQUIRE(t.loop.run_until([&] { return health.has_value() || t.failure.has_value(); }));
    CHECK_FALSE(t.failure);
    CHECK(told == 0);
    CHECK(t.finish() == 0);
  }
  SECTION("a malformed notice fails the channel") {
    LyingWorld t;
    t.wait_ready();
    t.agent_client();
    t.agent->on_request([](LyingAgent& a, const protocol::Request&) { a.notify("workspace.changed", json{{"path", "relative/path"}}); });
    t.channel->call("health", json::object(), std::chrono::seconds(10), [](rpc::CallOutcome) {});
    REQUIRE(t.loop.run_until([&] { return t.failure.has_value(); }, 10s));
    CHECK_THAT(t.failure->message, Catch::Contains("workspace.changed") && Catch::Contains("\"path\" must be absolute"));
    CHECK(t.finish() == 0);
  }
}

TEST_CASE("debounce: the first change at once, the rest folded into one when the gap has passed", "[channel]") {
  protocol::channel::Debounce d(250ms);
  auto t0 = Clock::now();
  CHECK(d.changed(t0));            // leading edge
  CHECK_FALSE(d.changed(t0 + 10ms));
  CHECK_FALSE(d.changed(t0 + 100ms));
  CHECK(d.pending());
  CHECK(d.due_in(t0 + 100ms) == 150ms);
  CHECK_FALSE(d.due(t0 + 249ms));
  CHECK(d.due(t0 + 250ms));        // trailing edge: one for both
  CHECK_FALSE(d.pending());
  CHECK_FALSE(d.due(t0 + 600ms));  // nothing more was pending
  CHECK_FALSE(d.changed(t0 + 300ms));  // within the gap of the trailing notice
  CHECK(d.due(t0 + 500ms));
  CHECK(d.changed(t0 + 800ms));    // a quiet gap: at once again
  CHECK_FALSE(d.due_in(t0 + 800ms));
}
