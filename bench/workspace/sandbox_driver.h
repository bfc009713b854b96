// bench/workspace: drives one SandboxManager (real QEMU guests, the real lockroom-agent) on its
// own loop for the workspace benchmark: create and destroy sandboxes, run guest processes to
// their exit, stream bytes into a process's stdin with the channel's flow control, and wait for
// any operation that reports a Result. Main thread only; a failed step throws
// std::runtime_error with the operation's own message (this is a benchmark's driver, not a server).
#pragma once

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <uv.h>

#include "bench/workspace/source_tree.h"
#include "server/common/paths.h"
#include "server/core/sandbox_manager.h"
#include "server/vm/accel.h"

namespace lockroom::bench {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

inline double ms(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

// The events the benchmark waits for: each process's exit (and when), and its first 64 KiB of output.
struct Sink final : core::SandboxEvents {
  std::map<std::string, std::string> output;
  std::map<std::string, core::ProcessExit> exited;
  std::map<std::string, Clock::time_point> exited_at;
  void state_changed(const std::string&, core::SandboxState, core::StopReason, const std::string&) override {}
  void process_output(const std::string&, core::OutputStream, const core::OutputChunk&) override {}
  void process_bytes(const std::string& pid, core::OutputStream, std::string_view b) override {
    auto& out = output[pid];
    if (out.size() < 64 * 1024) out.append(b);
  }
  void process_exited(const std::string& pid, const core::ProcessExit& exit) override {
    exited[pid] = exit;
    exited_at[pid] = Clock::now();
  }
};

// One loop and one manager (so one template boot) for the whole run, state in a temporary directory.
struct Driver {
  uv_loop_t loop{};
  Sink sink;
  TempDir state{"lockroom-bench-state"};
  std::unique_ptr<core::SandboxManager> manager;

  Driver() {
    uv_loop_init(&loop);
    core::ManagerConfig config;
    config.paths.cache = default_paths().cache;
    config.paths.state = state.path();
    config.accel = vm::choose_accel(vm::probe_host_virt(), vm::AccelPreference::kAuto).accel;
    config.agent = LOCKROOM_AGENT;
    manager = std::make_unique<core::SandboxManager>(&loop, config, sink);
  }
  ~Driver() {
    bool done = false;
    manager->shutdown([&] { done = true; });
    while (!done) uv_run(&loop, UV_RUN_ONCE);
    manager.reset();
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
  }
  template <typename Pred>
  void run_until(Pred done) {
    auto deadline = Clock::now() + 600s;
    while (!done()) {
      if (Clock::now() > deadline) throw std::runtime_error("benchmark step timed out after 600 s");
      uv_run(&loop, UV_RUN_ONCE);
    }
  }
  // Starts an operation that reports a Result<T>, runs the loop until it has, and unwraps it.
  template <typename T, typename Start>
  T await(const char* what, Start start) {
    std::optional<Result<T>> r;
    start([&](Result<T> v) { r = std::move(v); });
    run_until([&] { return r.has_value(); });
    if (!r->ok()) throw std::runtime_error(std::string(what) + ": " + r->error().message);
    return std::move(**r);
  }
  core::CreateResult create(std::optional<core::WorkspaceRequest> workspace = std::nullopt) {
    core::CreateRequest request;
    request.workspace = std::move(workspace);
    return await<core::CreateResult>("sandbox create", [&](auto done) { manager->create(request, nullptr, done); });
  }
  // Waits until no template is being built in the background (a workspace template follows the
  // first create of a workspace and boots a VM of its own): measured steps must not share the
  // CPU with it.
  void wait_templates_idle() {
    bool idle = false;
    manager->templates().when_idle([&] { idle = true; });
    run_until([&] { return idle; });
  }
  void destroy(const std::string& sb) {
    std::optional<Result<void>> r;
    manager->destroy(sb, [&](Result<void> v) { r = std::move(v); });
    run_until([&] { return r.has_value(); });
    if (!r->ok()) throw std::runtime_error("sandbox destroy: " + r->error().message);
  }
  std::string start(const std::string& sb, std::vector<std::string> argv) {
    return await<std::string>("process start", [&](auto done) {
      manager->start_process(sb, core::ProcessSpec{std::move(argv), std::nullopt, {}, std::nullopt}, done);
    });
  }
  // Waits for the process; throws with its output unless it exited 0.
  void wait_ok(const std::string& pid) {
    run_until([&] { return sink.exited.count(pid) != 0; });
    const auto& exit = sink.exited[pid];
    if (exit.exit_code != 0)
      throw std::runtime_error("a guest process failed (exit " + std::to_string(exit.exit_code.value_or(-1)) + ", signal " +
                               std::to_string(exit.signal.value_or(0)) + "): " + sink.output[pid]);
  }
  // Runs `script` with sh in the guest; milliseconds from the start request to its exit.
  double guest(const std::string& sb, const std::string& script) {
    auto t0 = Clock::now();
    std::string pid = start(sb, {"sh", "-c", script});
    wait_ok(pid);
    return ms(t0, sink.exited_at[pid]);
  }
  // Writes everything `read` gives (it fills a buffer, 0 at the end) into the process's stdin,
  // waiting for the channel's credit, then closes it. Returns the byte count.
  template <typename Read>
  std::uint64_t feed(const std::string& pid, Read read) {
    std::vector<char> buf(64 * 1024);
    std::uint64_t total = 0;
    std::size_t n;
    while ((n = read(buf.data(), buf.size())) > 0) {
      for (;;) {
        auto w = manager->write_stdin(pid, std::string_view(buf.data(), n));
        if (w.ok()) break;
        if (w.error().code != ErrorCode::kLimitExceeded) throw std::runtime_error("writing stdin: " + w.error().message);
        uv_run(&loop, UV_RUN_ONCE);  // until the guest grants credit
      }
      total += n;
    }
    auto closed = manager->close_stdin(pid);
    if (!closed.ok()) throw std::runtime_error("closing stdin: " + closed.error().message);
    return total;
  }
  std::pair<core::SandboxWorkspace*, channel::AgentClient*> workspace(const std::string& sb) {
    auto ws = manager->workspace(sb);
    if (!ws.ok()) throw std::runtime_error(ws.error().message);
    return *ws;
  }
};

}  // namespace lockroom::bench
