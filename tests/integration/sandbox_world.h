// The shared world of the sandbox integration tests: one loop, one SandboxManager (so one
// template boot per test executable), a recorder of every event and a scripted editor that
// answers network approvals. Each test_sandbox*.cpp file in this folder adds cases that create
// their own sandboxes in it.
#pragma once

#include <catch2/catch.hpp>

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "server/core/process_watch.h"
#include "server/core/sandbox_manager.h"
#include "tests/integration/editor_stub.h"
#include "tests/integration/guest_fixture.h"

namespace lockroom::testing {

using namespace std::chrono_literals;

// A manager's config for a test: lockroom's own cache (guest images and templates are shared
// across tests and runs), state under `state`, the accelerator lockroom would choose, the agent
// built with the tests.
inline core::ManagerConfig test_manager_config(const std::filesystem::path& state) {
  core::ManagerConfig config;
  config.paths.cache = default_paths().cache;
  config.paths.state = state;
  config.accel = vm::choose_accel(vm::probe_host_virt(), vm::AccelPreference::kAuto).accel;
  config.agent = LOCKROOM_AGENT;
  return config;
}

// Records every event; tests run the loop until what they wait for has happened.
struct Recorder final : core::SandboxEvents {
  std::map<std::string, std::string> output;  // process id -> all bytes
  std::map<std::string, core::ProcessExit> exits;
  std::vector<std::tuple<std::string, core::SandboxState, core::StopReason>> states;
  void state_changed(const std::string& id, core::SandboxState s, core::StopReason r, const std::string&) override {
    states.emplace_back(id, s, r);
  }
  void process_output(const std::string& pid, core::OutputStream stream, const core::OutputChunk& chunk) override {
    REQUIRE_FALSE(chunk.base64);
    output[pid] += chunk.data;
    if (editor_events) editor_events->process_output(pid, stream, chunk);
  }
  std::vector<core::ProcessInfo> started;                      // every process_started
  std::vector<std::pair<std::string, std::uint64_t>> changes;  // sandbox id, version (workspace_changed)
  std::vector<std::tuple<std::string, egress::Policy, core::PolicyChangeCause>> policy_changes;
  void process_started(const core::ProcessInfo& info) override {
    started.push_back(info);
    if (editor_events) editor_events->process_started(info);
  }
  void workspace_changed(const std::string& id, std::uint64_t version) override {
    changes.emplace_back(id, version);
    if (editor_events) editor_events->workspace_changed(id, version);
  }
  void network_policy_changed(const std::string& id, const egress::Policy& policy, core::PolicyChangeCause cause) override {
    policy_changes.emplace_back(id, policy, cause);
    if (editor_events) editor_events->network_policy_changed(id, policy, cause);
  }
  std::vector<std::pair<std::string, core::MisbehaviourEvent>> misbehaved;  // sandbox id, what it sent
  // Also passed on to an editor's events when one is set (the Editor of editor_session.h sets its
  // api::SandboxMethods while it lives), so sandbox/misbehaved, process/*, changes/changed and
  // network/policyChanged reach it as under `lockroom serve`.
  core::SandboxEvents* editor_events = nullptr;
  void guest_misbehaved(const std::string& id, const core::MisbehaviourEvent& event) override {
    misbehaved.emplace_back(id, event);
    if (editor_events) editor_events->guest_misbehaved(id, event);
  }
  // sandbox id, decision: the "close" events with their phase cleared (as in the audit log)
  std::vector<std::pair<std::string, egress::AuditRecord>> network;
  std::vector<std::pair<std::string, egress::AuditRecord>> network_events;  // every event as sent: open, progress, close
  void network_event(const std::string& id, const egress::AuditRecord& record) override {
    network_events.emplace_back(id, record);
    if (record.phase != "close") return;
    egress::AuditRecord decision = record;
    decision.phase.clear();
    network.emplace_back(id, std::move(decision));
  }
  // Approvals go to the scripted editor (editor_stub.h), through the editor face's own code.
  EditorStub* editor = nullptr;
  void approve_network(const std::string& id, const egress::ApprovalQuestion& question, egress::ApprovalReply reply) override {
    if (!editor) return reply(egress::ApprovalOutcome::not_asked(egress::NoAnswerReason::kNotDeclared));
    editor->ask(id, question, std::move(reply));
  }
  void process_exited(const std::string& pid, const core::ProcessExit& exit) override {
    REQUIRE_FALSE(exits.count(pid));  // exactly one exit per process
    exits[pid] = exit;
    if (editor_events) editor_events->process_exited(pid, exit);
  }
  bool reached(const std::string& id, core::SandboxState state) const {
    for (const auto& [i, s, r] : states)
      if (i == id && s == state) return true;
    return false;
  }
};

// One loop and one manager for the whole executable, so the template boots once.
struct World {
  uv_loop_t loop{};
  testing::TempState state;
  Recorder events;
  core::ProcessWatch watch{events};  // kits' setup processes are the test's, not the recorder's
  std::unique_ptr<EditorStub> editor;
  std::unique_ptr<core::SandboxManager> manager;
  World() {
    uv_loop_init(&loop);
    manager = std::make_unique<core::SandboxManager>(&loop, test_manager_config(state.dir), watch);
  }
  // Runs the loop until `done()` holds, or fails after `limit`.
  template <typename Pred>
  void run_until(Pred done, std::chrono::milliseconds limit = 180s) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      uv_run(&loop, UV_RUN_ONCE);
    }
  }
  std::string create(core::CreateRequest request = {}) {
    std::optional<Result<core::CreateResult>> created;
    manager->create(request, nullptr, [&](Result<core::CreateResult> r) { created = std::move(r); });
    run_until([&] { return created.has_value(); });
    INFO((created->ok() ? std::string() : created->error().message));
    REQUIRE(created->ok());
    return (*created)->sandbox_id;
  }
  // Starts argv as the guest's default user (`agent`), or as root.
  std::string start(const std::string& sandbox, std::vector<std::string> argv, bool root = false) {
    std::optional<Result<std::string>> started;
    core::ProcessSpec spec;
    spec.argv = std::move(argv);
    spec.root = root;
    manager->start_process(sandbox, std::move(spec), [&](Result<std::string> r) { started = std::move(r); });
    run_until([&] { return started.has_value(); });
    INFO((started->ok() ? std::string() : started->error().message));
    REQUIRE(started->ok());
    return **started;
  }
  core::ProcessExit wait_exit(const std::string& pid) {
    run_until([&] { return events.exits.count(pid) != 0; });
    return events.exits[pid];
  }
  // The scripted editor that answers approvals, made on first use; close_editor() before the
  // test ends, so the loop has no handles of it left (a later test may close the loop).
  EditorStub& editor_stub() {
    if (!editor) editor = std::make_unique<EditorStub>(&loop);
    events.editor = editor.get();
    return *editor;
  }
  void close_editor() {
    if (!editor) return;
    events.editor = nullptr;
    bool closed = false;
    editor->close([&] { closed = true; });
    run_until([&] { return closed; });
    editor.reset();
  }
  // Runs `script` with the guest's sh, stderr folded into stdout; returns all of its output.
  std::string sh(const std::string& sandbox, const std::string& script, bool root = false) {
    std::string pid = start(sandbox, {"sh", "-c", script + " 2>&1"}, root);
    wait_exit(pid);
    return events.output[pid];
  }
  void destroy(const std::string& sandbox) {
    bool done = false;
    manager->destroy(sandbox, [&](Result<void> r) {
      CHECK(r.ok());
      done = true;
    });
    run_until([&] { return done; });
  }
};

// The one world of this test executable (created on first use).
World& world();

}  // namespace lockroom::testing
