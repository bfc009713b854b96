// SandboxManager: ids, the registry, processes routed to their sandbox, events passed on, shutdown;
// see sandbox_manager.h. Creating a sandbox is in sandbox_manager_create.cpp, images and
// templates in sandbox_manager_images.cpp.
#include "server/core/sandbox_manager.h"

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "server/common/uv_defer.h"
#include "server/core/host_random.h"
#include "server/core/sandbox_registry.h"

namespace lockroom::core {

using Clock = std::chrono::steady_clock;

namespace {

constexpr std::size_t kMaxTombstones = 256;

std::int64_t ms_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

}  // namespace

Result<SandboxNetwork*> SandboxManager::network(const std::string& sandbox_id) {
  auto sandbox = sandbox_for(sandbox_id);
  if (!sandbox) return sandbox.error();
  if (!(*sandbox)->network())
    return make_error(ErrorCode::kWrongState, "sandbox " + sandbox_id + " has no network: create it with `network` set");
  return (*sandbox)->network();
}

Result<std::pair<SandboxWorkspace*, channel::AgentClient*>> SandboxManager::workspace(const std::string& sandbox_id) {
  auto sandbox = sandbox_for(sandbox_id);
  if (!sandbox) return sandbox.error();
  return (*sandbox)->workspace();
}

Result<channel::AgentClient*> SandboxManager::guest_files(const std::string& sandbox_id) {
  auto sandbox = sandbox_for(sandbox_id);
  if (!sandbox) return sandbox.error();
  return (*sandbox)->files();
}

// For `lockroom ps` and `lockroom kill` in other processes (see sandbox_registry.h).
void SandboxManager::publish_record(const std::string& id, const vm::Vm& vm, const Resources& limits) const {
  SandboxRecord record;
  record.id = id;
  record.owner_pid = static_cast<int>(getpid());
  record.qemu_pid = vm.pid();
  record.created_unix_ms = unix_time_ns() / 1000000;
  record.accel = std::string(vm::accel_name(config_.accel));
  record.limits = limits;
  record.state_dir = vm.state_dir();
  if (auto written = write_sandbox_record(record); !written)
    spdlog::warn("sandbox {} will not show in `lockroom ps`: {}", id, written.error().message);
}

// --- destroy, list, shutdown ----------------------------------------------------------------

void SandboxManager::destroy(const std::string& sandbox_id, std::function<void(Result<void>)> done) {
  destroy(sandbox_id, StopReason::kDestroyed, "destroyed on request", std::move(done));
}

void SandboxManager::destroy(const std::string& sandbox_id, StopReason reason, const std::string& message,
                             std::function<void(Result<void>)> done) {
  auto sandbox = sandbox_for(sandbox_id);
  if (!sandbox) return done(sandbox.error());
  (*sandbox)->stop(reason, message, [done] { done({}); });
}

std::vector<SandboxSummary> SandboxManager::list() const {
  std::vector<SandboxSummary> out;
  for (const auto& [id, s] : sandboxes_) {
    out.push_back(SandboxSummary{id, s->state(), s->reason(), ms_since(s->created()), s->live_processes(), s->limits(), s->qemu_pid(), s->facts()});
  }
  return out;
}

Result<void> SandboxManager::set_label(const std::string& sandbox_id, std::string label) {
  auto sandbox = sandbox_for(sandbox_id);
  if (!sandbox) return sandbox.error();
  (*sandbox)->facts().label = std::move(label);
  return {};
}

Result<std::vector<ProcessInfo>> SandboxManager::processes(const std::string& sandbox_id) {
  auto sandbox = sandbox_for(sandbox_id);
  if (!sandbox) return sandbox.error();
  return (*sandbox)->processes();
}

void SandboxManager::pause_output(const std::string& process_id, bool paused) {
  auto it = process_owner_.find(process_id);
  if (it == process_owner_.end()) return;
  if (auto s = sandboxes_.find(it->second); s != sandboxes_.end()) s->second->pause_output(process_id, paused);
}

void SandboxManager::shutdown(std::function<void()> done) {
  shutting_down_ = true;
  auto remaining = std::make_shared<std::size_t>(sandboxes_.size() + 2);
  auto one_done = [remaining, done] {
    if (--*remaining == 0) done();
  };
  templates_->shutdown(one_done);
  std::vector<Sandbox*> all;
  for (auto& [id, s] : sandboxes_) all.push_back(s.get());
  for (Sandbox* s : all) s->stop(StopReason::kServerShutdown, "the server is shutting down", one_done);
  one_done();
}

// --- processes ------------------------------------------------------------------------------

void SandboxManager::start_process(const std::string& sandbox_id, ProcessSpec spec, std::function<void(Result<std::string>)> done) {
  auto sandbox = sandbox_for(sandbox_id);
  if (!sandbox) return done(sandbox.error());
  std::string process_id = "p-" + std::to_string(next_process_++);
  process_owner_[process_id] = sandbox_id;
  (*sandbox)->start_process(process_id, spec, [this, alive = alive_, sandbox_id, process_id, done](Result<void> r) {
    if (!*alive) return;
    if (!r) {
      process_owner_.erase(process_id);
      return done(r.error());
    }
    done(process_id);
    // After the starter's answer, so that it can claim or hold the process first (ProcessWatch).
    if (!*alive) return;
    auto s = sandboxes_.find(sandbox_id);
    if (s == sandboxes_.end()) return;
    if (auto info = s->second->process_info(process_id)) events_.process_started(*info);
  });
}

Result<void> SandboxManager::write_stdin(const std::string& process_id, std::string_view bytes) {
  auto s = sandbox_of_process(process_id);
  if (!s) return s.error();
  return (*s)->write_stdin(process_id, bytes);
}

Result<void> SandboxManager::close_stdin(const std::string& process_id) {
  auto s = sandbox_of_process(process_id);
  if (!s) return s.error();
  return (*s)->close_stdin(process_id);
}

void SandboxManager::resize(const std::string& process_id, int cols, int rows, std::function<void(Result<void>)> done) {
  auto s = sandbox_of_process(process_id);
  if (!s) return done(s.error());
  (*s)->resize(process_id, cols, rows, std::move(done));
}

void SandboxManager::signal(const std::string& process_id, int signal, std::function<void(Result<void>)> done) {
  auto s = sandbox_of_process(process_id);
  if (!s) return done(s.error());
  (*s)->signal(process_id, signal, std::move(done));
}

// --- lookups and events ---------------------------------------------------------------------

Result<Sandbox*> SandboxManager::sandbox_for(const std::string& sandbox_id) {
  if (auto it = sandboxes_.find(sandbox_id); it != sandboxes_.end()) return it->second.get();
  if (auto t = tombstones_.find(sandbox_id); t != tombstones_.end())
    return make_error(ErrorCode::kWrongState, "sandbox " + sandbox_id + " is " + std::string(state_name(t->second.first)) + " (" +
                                                  std::string(reason_name(t->second.second)) + "); create a new sandbox");
  return make_error(ErrorCode::kNotFound, "no sandbox " + sandbox_id + "; sandbox/list shows the live ones");
}

Result<Sandbox*> SandboxManager::sandbox_of_process(const std::string& process_id) {
  auto it = process_owner_.find(process_id);
  if (it == process_owner_.end())
    return make_error(ErrorCode::kNotFound, "no running process " + process_id + " (it has exited, or never existed)");
  return sandbox_for(it->second);
}

std::string SandboxManager::new_sandbox_id() {
  static const char* hex = "0123456789abcdef";
  for (;;) {
    std::string bytes = random_entropy(3);
    std::string id = "sb-";
    for (unsigned char c : bytes) id += {hex[c >> 4], hex[c & 15]};
    if (!sandboxes_.count(id) && !tombstones_.count(id)) return id;
  }
}

void SandboxManager::forget(const std::string& sandbox_id) {
  auto it = sandboxes_.find(sandbox_id);
  if (it == sandboxes_.end()) return;
  template_use_.erase(sandbox_id);
  if (tombstones_.size() >= kMaxTombstones) tombstones_.erase(tombstones_.begin());
  tombstones_[sandbox_id] = {it->second->state(), it->second->reason()};
  sandboxes_.erase(it);
}

std::function<void(Result<CreateResult>)> SandboxManager::announce_when_created(bool caller_announces,
                                                                               std::function<void(Result<CreateResult>)> done) {
  return [this, alive = alive_, caller_announces, done = std::move(done)](Result<CreateResult> result) {
    if (*alive && result && !caller_announces) announce(result->sandbox_id);
    done(std::move(result));
  };
}

void SandboxManager::announce(const std::string& sandbox_id) {
  if (!unannounced_.erase(sandbox_id)) return;
  auto it = sandboxes_.find(sandbox_id);
  if (it != sandboxes_.end() && it->second->state() == SandboxState::kReady)
    events_.state_changed(sandbox_id, SandboxState::kReady, StopReason::kNone, "");
}

void SandboxManager::state_changed(const std::string& id, SandboxState state, StopReason reason, const std::string& message) {
  if (unannounced_.count(id)) {
    if (is_final(state)) unannounced_.erase(id);
  } else {
    events_.state_changed(id, state, reason, message);
  }
  if (is_final(state)) {
    // The sandbox's own callback is running: free it on a later turn.
    defer(loop_, [this, alive = alive_, id] {
      if (*alive) forget(id);
    });
  }
}

void SandboxManager::process_output(const std::string& process_id, OutputStream stream, const OutputChunk& chunk) {
  events_.process_output(process_id, stream, chunk);
}

void SandboxManager::process_bytes(const std::string& process_id, OutputStream stream, std::string_view bytes) {
  events_.process_bytes(process_id, stream, bytes);
}

void SandboxManager::process_exited(const std::string& process_id, const ProcessExit& exit) {
  events_.process_exited(process_id, exit);
  auto it = process_owner_.find(process_id);
  if (it == process_owner_.end()) return;
  exited_owner_[process_id] = it->second;
  exited_order_.push_back(process_id);
  if (exited_order_.size() > kMaxExitedOwners) {
    exited_owner_.erase(exited_order_.front());
    exited_order_.pop_front();
  }
  process_owner_.erase(it);
}

std::optional<std::string> SandboxManager::sandbox_of(const std::string& process_id) const {
  auto it = process_owner_.find(process_id);
  if (it != process_owner_.end()) return it->second;
  if (auto e = exited_owner_.find(process_id); e != exited_owner_.end()) return e->second;
  return std::nullopt;
}

}  // namespace lockroom::core
