// Limits in real guests, each met on purpose: a tiny disk fills and the write fails with ENOSPC,
// a fork bomb under maxProcesses 8 is contained, a start at the limit is refused with a typed
// error, and each is reported once as a limit event while the sandbox keeps answering.
//
// These cases run their own SandboxManager (LimitsManager below), which records limit events
// itself, so they do not depend on the shared world's recorder; it boots its own template once.
#include <csignal>
#include <fstream>

#include "tests/integration/sandbox_world.h"
#include "tests/support/temp_dir.h"

using namespace lockroom;
using namespace lockroom::testing;
namespace fs = std::filesystem;
namespace wire = lockroom::protocol::channel;

namespace {

struct LimitsRecorder final : core::SandboxEvents {
  std::map<std::string, std::string> output;
  std::map<std::string, core::ProcessExit> exits;
  std::vector<std::pair<std::string, core::LimitEvent>> limits;  // sandbox id, event
  void state_changed(const std::string&, core::SandboxState, core::StopReason, const std::string&) override {}
  void process_output(const std::string& pid, core::OutputStream, const core::OutputChunk& chunk) override { output[pid] += chunk.data; }
  void process_exited(const std::string& pid, const core::ProcessExit& exit) override { exits[pid] = exit; }
  std::vector<core::LimitEvent> of(const std::string& sandbox, core::LimitKind kind) const {
    std::vector<core::LimitEvent> out;
    for (const auto& [id, e] : limits)
      if (id == sandbox && e.limit == kind) out.push_back(e);
    return out;
  }
};

// The manager reports limit events through SandboxEvents::limit_reached, which it does not
// forward; this one catches them on their way.
class LimitsManager final : public core::SandboxManager {
 public:
  LimitsManager(uv_loop_t* loop, core::ManagerConfig config, LimitsRecorder& events) : SandboxManager(loop, std::move(config), events), recorder_(events) {}

 private:
  void limit_reached(const std::string& sandbox_id, const core::LimitEvent& event) override { recorder_.limits.emplace_back(sandbox_id, event); }
  LimitsRecorder& recorder_;
};

// A folder with one file, so a sandbox gets a workspace and with it a handle on its agent: the
// disk case sends limits.set itself until the manager sends limits_params() after every restore.
struct SmallFolder {
  TempDir tmp{"lockroom-limits"};
  fs::path dir = tmp.write("README.md", "limits\n").parent_path();
};

struct LimitsWorld {
  uv_loop_t loop{};
  TempState state;
  SmallFolder folder;
  LimitsRecorder events;
  std::unique_ptr<LimitsManager> manager;
  LimitsWorld() {
    uv_loop_init(&loop);
    manager = std::make_unique<LimitsManager>(&loop, test_manager_config(state.dir), events);
  }
  template <typename Pred>
  bool run_until(Pred done, std::chrono::milliseconds limit = 180s) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      uv_run(&loop, UV_RUN_ONCE);
    }
    return true;
  }
  std::string create(core::ResourceRequest resources, bool with_workspace = true) {
    core::CreateRequest request;
    request.resources = resources;
    if (with_workspace) request.workspace = core::WorkspaceRequest{folder.dir.string(), {}, {}};
    std::optional<Result<core::CreateResult>> created;
    manager->create(request, nullptr, [&](Result<core::CreateResult> r) { created = std::move(r); });
    REQUIRE(run_until([&] { return created.has_value(); }));
    INFO((created->ok() ? std::string() : created->error().message));
    REQUIRE(created->ok());
    return (*created)->sandbox_id;
  }
  // The agent's limits.set, as the manager sends it after a restore (resources.h, limits_params).
  wire::LimitsResult set_limits(const std::string& sandbox, const core::Resources& resources) {
    auto handle = manager->workspace(sandbox);
    REQUIRE(handle.ok());
    std::optional<Result<wire::LimitsResult>> set;
    handle->second->set_limits(core::limits_params(resources), [&](Result<wire::LimitsResult> r) { set = std::move(r); });
    REQUIRE(run_until([&] { return set.has_value(); }, 30s));
    INFO((set->ok() ? std::string() : set->error().message));
    REQUIRE(set->ok());
    return **set;
  }
  Result<std::string> try_start(const std::string& sandbox, const std::string& script) {
    std::optional<Result<std::string>> started;
    manager->start_process(sandbox, core::ProcessSpec{{"sh", "-c", script}, std::nullopt, {}, std::nullopt},
                           [&](Result<std::string> r) { started = std::move(r); });
    REQUIRE(run_until([&] { return started.has_value(); }, 60s));
    return *started;
  }
  std::string start(const std::string& sandbox, const std::string& script) {
    auto started = try_start(sandbox, script);
    INFO((started.ok() ? std::string() : started.error().message));
    REQUIRE(started.ok());
    return *started;
  }
  core::ProcessExit wait_exit(const std::string& pid, std::chrono::milliseconds limit = 120s) {
    REQUIRE(run_until([&] { return events.exits.count(pid) != 0; }, limit));
    return events.exits[pid];
  }
  void signal(const std::string& pid, int sig) {
    std::optional<Result<void>> sent;
    manager->signal(pid, sig, [&](Result<void> r) { sent = r; });
    REQUIRE(run_until([&] { return sent.has_value(); }, 30s));
    CHECK(sent->ok());
  }
  void destroy(const std::string& sandbox) {
    bool done = false;
    manager->destroy(sandbox, [&](Result<void> r) {
      CHECK(r.ok());
      done = true;
    });
    REQUIRE(run_until([&] { return done; }, 60s));
  }
};

LimitsWorld& limits_world() {
  static LimitsWorld* w = new LimitsWorld();  // lives as long as the executable, like world()
  return *w;
}

}  // namespace

TEST_CASE("a sandbox's disk limit: writing past it fails with ENOSPC, reported once", "[sandbox][limits][disk]") {
  LimitsWorld& w = limits_world();
  core::ResourceRequest resources;
  resources.disk_mib = 16;
  std::string sb = w.create(resources);
  core::Resources limits;
  limits.disk_mib = 16;
  auto set = w.set_limits(sb, limits);
  CHECK(set.disk_enforcement == "tmpfs");
  CHECK(set.max_disk_mib == 16);

  // 16 MiB of room: the home, /tmp and /dev/shm all count (one tmpfs), and a 40 MiB write stops at it.
  std::string fill = w.start(sb,
                             "dd if=/dev/zero of=$HOME/fill bs=1M count=8 2>/dev/null; "
                             "dd if=/dev/zero of=/tmp/fill bs=1M count=40 2>&1 | grep -o 'No space left on device' | head -1; "
                             "du -sm $HOME/fill /tmp/fill | awk '{s += $1} END {print \"total\", s}'; "
                             "{ echo shm > /dev/shm/x; } 2>&1 | grep -o 'No space left on device' | head -1; sleep 3");
  auto exit = w.wait_exit(fill);
  CHECK(exit.exit_code == 0);
  std::string out = w.events.output[fill];
  INFO(out);
  CHECK_THAT(out, Catch::StartsWith("No space left on device\n"));
  // The sandbox's files hold the 16 MiB, a little less (rounding) and never more.
  auto total = out.find("total ");
  REQUIRE(total != std::string::npos);
  int mib = std::stoi(out.substr(total + 6));
  CHECK(mib >= 14);
  CHECK(mib <= 16);
  CHECK_THAT(out, Catch::EndsWith("No space left on device\n"));  // /dev/shm is on the same tmpfs

  // The agent looks once a second: the full disk is one event, however many writes failed.
  REQUIRE(w.run_until([&] { return !w.events.of(sb, core::LimitKind::kDisk).empty(); }, 20s));
  std::string again = w.start(sb, "for i in 1 2 3; do echo x >> $HOME/more 2>/dev/null; sleep 1; done; rm $HOME/fill; echo freed");
  w.wait_exit(again);
  CHECK(w.events.output[again] == "freed\n");
  auto disk = w.events.of(sb, core::LimitKind::kDisk);
  REQUIRE(disk.size() == 1);
  CHECK(disk[0].value == 16);
  CHECK_THAT(disk[0].message, Catch::Contains("disk is full") && Catch::Contains("16 MiB"));

  // After deleting, there is room again.
  std::string write = w.start(sb, "dd if=/dev/zero of=$HOME/again bs=1M count=4 2>/dev/null && echo wrote");
  w.wait_exit(write);
  CHECK(w.events.output[write] == "wrote\n");
  w.destroy(sb);
}

TEST_CASE("a fork bomb under maxProcesses 8 is contained and reported once, the sandbox keeps answering", "[sandbox][limits][processes]") {
  LimitsWorld& w = limits_world();
  core::ResourceRequest resources;
  resources.max_processes = 8;
  std::string sb = w.create(resources, false);

  // The bomb's leader becomes `sleep` (exec, no fork), so the whole bomb is one process group.
  std::string bomb = w.start(sb, "exec 2>/dev/null; b() { b | b & }; b; exec sleep 600");
  REQUIRE(w.run_until([&] { return !w.events.of(sb, core::LimitKind::kProcesses).empty(); }, 60s));
  // Let it rage a little longer: still one event.
  w.run_until([] { return false; }, 3s);
  auto processes = w.events.of(sb, core::LimitKind::kProcesses);
  REQUIRE(processes.size() == 1);
  CHECK(processes[0].value == 8);
  CHECK_THAT(processes[0].message, Catch::Contains("8 processes"));
  if (processes[0].process_id) CHECK(*processes[0].process_id == bomb);

  w.signal(bomb, SIGKILL);
  auto exit = w.wait_exit(bomb, 60s);
  CHECK(exit.signal == SIGKILL);

  w.run_until([] { return false; }, 1s);  // the agent reaps what is left of the bomb

  // Eight processes alive at once: a ninth start is refused with a typed error naming the limit.
  std::string holder = w.start(sb, "for i in 1 2 3 4 5 6 7; do sleep 600 & done; echo holding; wait");
  REQUIRE(w.run_until([&] { return w.events.output[holder] == "holding\n"; }, 30s));
  auto refused = w.try_start(sb, "echo never");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == ErrorCode::kLimitExceeded);
  CHECK_THAT(refused.error().message, Catch::Contains("maxProcesses = 8"));
  w.signal(holder, SIGKILL);
  w.wait_exit(holder, 60s);

  // The sandbox answers as before.
  std::string alive = w.start(sb, "echo alive");
  w.wait_exit(alive);
  CHECK(w.events.output[alive] == "alive\n");
  w.destroy(sb);
}

TEST_CASE("the output and lifetime limits are reported as limit events too", "[sandbox][limits]") {
  LimitsWorld& w = limits_world();
  core::ResourceRequest resources;
  resources.max_output_bytes = 4096;
  resources.lifetime_seconds = 5;
  std::string sb = w.create(resources, false);
  std::string chatty = w.start(sb, "while :; do echo 0123456789abcdef0123456789abcdef; done");
  auto exit = w.wait_exit(chatty);
  CHECK(exit.reason == core::ProcessEndReason::kOutputLimit);
  auto output = w.events.of(sb, core::LimitKind::kOutput);
  REQUIRE(output.size() == 1);
  CHECK(output[0].process_id == chatty);
  CHECK(output[0].value == 4096);

  REQUIRE(w.run_until([&] { return !w.events.of(sb, core::LimitKind::kLifetime).empty(); }, 30s));
  auto lifetime = w.events.of(sb, core::LimitKind::kLifetime);
  REQUIRE(lifetime.size() == 1);
  CHECK(lifetime[0].value == 5);
  CHECK_THAT(lifetime[0].message, Catch::Contains("timeoutSeconds"));
}
