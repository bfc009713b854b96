// Sandbox; see sandbox.h.
#include "server/core/sandbox.h"

#include <algorithm>
#include <csignal>
#include <cstdlib>

#include <spdlog/spdlog.h>

#include "server/common/uv_handle.h"

namespace lockroom::core {

namespace wire = protocol::channel;
using namespace std::chrono_literals;

namespace {

constexpr auto kHealthEvery = 15s;
constexpr int kMaxMissedHealth = 3;
// A guest reports each limit once per episode; a hostile one could report it in a loop.
constexpr auto kMinLimitReportGap = 1s;

LimitKind limit_kind(wire::GuestLimit limit) {
  switch (limit) {
    case wire::GuestLimit::kDisk: return LimitKind::kDisk;
    case wire::GuestLimit::kProcesses: return LimitKind::kProcesses;
    case wire::GuestLimit::kMemory: return LimitKind::kMemory;
  }
  return LimitKind::kDisk;
}

OutputStream stream_of(channel::OutputKind kind) {
  switch (kind) {
    case channel::OutputKind::kStdout: return OutputStream::kStdout;
    case channel::OutputKind::kStderr: return OutputStream::kStderr;
    case channel::OutputKind::kPty: return OutputStream::kPty;
  }
  return OutputStream::kStdout;
}

bool is_failure(StopReason reason) {
  return reason == StopReason::kGuestCrashed || reason == StopReason::kChannelError ||
         reason == StopReason::kAgentUnresponsive || reason == StopReason::kMemoryLimit;
}

}  // namespace

std::string_view stream_name(OutputStream stream) {
  switch (stream) {
    case OutputStream::kStdout: return "stdout";
    case OutputStream::kStderr: return "stderr";
    case OutputStream::kPty: return "pty";
  }
  return "stdout";
}

std::string_view end_reason_name(ProcessEndReason reason) {
  switch (reason) {
    case ProcessEndReason::kNone: return "";
    case ProcessEndReason::kOutputLimit: return "outputLimit";
    case ProcessEndReason::kSandboxGone: return "sandboxGone";
  }
  return "";
}

std::string_view origin_name(ProcessOrigin origin) {
  switch (origin) {
    case ProcessOrigin::kClient: return "client";
    case ProcessOrigin::kKitService: return "kitService";
    case ProcessOrigin::kKitSetup: return "kitSetup";
  }
  return "client";
}

std::string_view policy_cause_name(PolicyChangeCause cause) {
  switch (cause) {
    case PolicyChangeCause::kApproval: return "approval";
    case PolicyChangeCause::kRequest: return "request";
  }
  return "request";
}

std::string_view limit_name(LimitKind limit) {
  switch (limit) {
    case LimitKind::kDisk: return "disk";
    case LimitKind::kProcesses: return "processes";
    case LimitKind::kOutput: return "output";
    case LimitKind::kMemory: return "memory";
    case LimitKind::kLifetime: return "lifetime";
  }
  return "disk";
}

struct Sandbox::Process {
  std::int64_t pid = 0;  // in the guest; 0 until process.start answers
  bool pty = false;
  ProcessInfo info;
  bool paused = false;                     // flow control: output left in the guest
  std::optional<ProcessExit> pending_exit;  // came while paused: reported once the held output is out
  std::chrono::steady_clock::time_point window_start = std::chrono::steady_clock::now();  // a pty's output window
  std::uint64_t output_bytes = 0;  // in the whole life (pipes) or the current window (pty)
  bool over_limit = false;
  OutputTextEncoder encoders[3];
  OutputTextEncoder& encoder(OutputStream s) { return encoders[static_cast<int>(s)]; }
  // The starter's answer until process.start answers; whoever answers first (the agent's reply,
  // or the sandbox ending meanwhile) takes it.
  std::shared_ptr<std::function<void(Result<void>)>> start_done;
};

namespace {
void answer_start(const std::shared_ptr<std::function<void(Result<void>)>>& pending, Result<void> result) {
  if (!pending || !*pending) return;
  auto done = std::exchange(*pending, nullptr);
  done(std::move(result));
}
}  // namespace

Sandbox::Sandbox(uv_loop_t* loop, std::string id, Resources limits, std::map<std::string, std::string> env, SandboxEvents& events)
    : loop_(loop), id_(std::move(id)), limits_(limits), env_(std::move(env)), events_(events) {}

Sandbox::~Sandbox() {
  *alive_ = false;
  close_handle(lifetime_);
  close_handle(health_);
  close_handle(channel_grace_);
  network_.reset();
  workspace_.reset();
  close_and_release(std::move(link_));
}

void Sandbox::adopt(std::unique_ptr<vm::Vm> vm, std::unique_ptr<GuestLink> link) {
  vm_ = std::move(vm);
  link_ = std::move(link);
  auto alive = alive_;
  link_->agent().on_limit_reached([this, alive](const wire::LimitReached& note) {
    if (*alive) on_guest_limit(note);
  });
  changes_ = std::make_unique<ChangeNotice>(loop_, [this](std::uint64_t version) { events_.workspace_changed(id_, version); });
  link_->agent().on_workspace_changed([this, alive](const std::string&) {
    if (*alive && changes_ && state_ == SandboxState::kReady) changes_->changed();
  });
  set_state(SandboxState::kReady, StopReason::kNone, "");
  arm_lifetime();
}

void Sandbox::report_limit(LimitEvent event) {
  spdlog::info("{}: {} limit reached: {}", id_, limit_name(event.limit), event.message);
  events_.limit_reached(id_, event);
}

std::string Sandbox::process_id_of_pid(std::int64_t pid) const {
  for (const auto& [process_id, p] : processes_)
    if (pid > 0 && p->pid == pid) return process_id;
  return {};
}

void Sandbox::on_guest_limit(const wire::LimitReached& note) {
  if (state_ != SandboxState::kReady) return;
  LimitEvent event{limit_kind(note.limit), note.message, std::nullopt, std::nullopt};
  // The guest's value is only its claim: the host names the limits it set.
  if (event.limit == LimitKind::kDisk) event.value = limits_.disk_mib;
  if (event.limit == LimitKind::kMemory) event.value = limits_.memory_mib;
  if (event.limit == LimitKind::kProcesses) event.value = limits_.max_processes;
  if (note.pid) {
    for (const auto& [process_id, p] : processes_)
      if (p->pid == *note.pid) event.process_id = process_id;
  }
  auto now = std::chrono::steady_clock::now();
  auto last = last_guest_limit_.find(event.limit);
  if (last != last_guest_limit_.end() && now - last->second < kMinLimitReportGap) return;
  last_guest_limit_[event.limit] = now;
  report_limit(std::move(event));
}

void Sandbox::arm_lifetime() {
  lifetime_ = new_handle<uv_timer_t>(this);
  uv_timer_init(loop_, lifetime_);
  uv_timer_start(lifetime_, [](uv_timer_t* t) {
    auto* self = static_cast<Sandbox*>(t->data);
    if (!self) return;
    std::string message = "the sandbox reached its lifetime limit of " + std::to_string(self->limits_.lifetime_seconds) +
                          " s (resources.timeoutSeconds)";
    self->report_limit(LimitEvent{LimitKind::kLifetime, message, std::nullopt, self->limits_.lifetime_seconds});
    self->stop(StopReason::kLifetimeLimit, message);
  }, static_cast<std::uint64_t>(limits_.lifetime_seconds) * 1000, 0);

  health_ = new_handle<uv_timer_t>(this);
  uv_timer_init(loop_, health_);
  auto every = static_cast<std::uint64_t>(std::chrono::milliseconds(kHealthEvery).count());
  uv_timer_start(health_, [](uv_timer_t* t) {
    if (auto* self = static_cast<Sandbox*>(t->data)) self->check_health();
  }, every, every);
}

void Sandbox::check_health() {
  if (state_ != SandboxState::kReady || !link_ || health_in_flight_) return;
  health_in_flight_ = true;
  auto alive = alive_;
  link_->agent().health([this, alive](Result<wire::HealthResult> r) {
    if (!*alive) return;
    health_in_flight_ = false;
    missed_health_ = r.ok() ? 0 : missed_health_ + 1;
    if (missed_health_ >= kMaxMissedHealth)
      stop(StopReason::kAgentUnresponsive, "the guest agent did not answer " + std::to_string(kMaxMissedHealth) +
                                               " health checks in a row (last: " + r.error().message + ")");
  });
}

void Sandbox::set_state(SandboxState state, StopReason reason, const std::string& message) {
  state_ = state;
  reason_ = reason;
  events_.state_changed(id_, state, reason, message);
}

Sandbox::Process* Sandbox::find(const std::string& process_id) {
  auto it = processes_.find(process_id);
  return it == processes_.end() ? nullptr : it->second.get();
}

void Sandbox::start_process(const std::string& process_id, const ProcessSpec& spec, std::function<void(Result<void>)> done) {
  if (auto ok = allowed(SandboxOp::kStartProcess); !ok) return done(ok.error());
  auto& proc = processes_[process_id];
  proc = std::make_unique<Process>();
  proc->pty = spec.pty.has_value();
  auto pending = std::make_shared<std::function<void(Result<void>)>>(std::move(done));
  proc->start_done = pending;
  // Terminals and pipes alike start where the work is: the workspace, when there is one.
  std::optional<std::string> cwd = spec.cwd;
  if (!cwd) cwd = workspace_ ? SandboxWorkspace::kGuestPath : spec.root ? "/root" : "/home/agent";
  proc->info = ProcessInfo{process_id, id_, spec.argv, cwd.value_or("/"), proc->pty, spec.origin, spec.name,
                           std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count(),
                           std::nullopt};

  wire::ProcessStartParams params;
  params.argv = spec.argv;
  params.cwd = cwd;
  for (const auto& [k, v] : env_) params.env.emplace_back(k, v);
  for (const auto& [k, v] : spec.env) params.env.emplace_back(k, v);
  if (spec.pty) params.pty = wire::TerminalSize{spec.pty->first, spec.pty->second};
  if (spec.root) params.user = "root";

  auto alive = alive_;
  channel::ProcessEvents events;
  events.on_output = [this, alive, process_id](channel::OutputKind kind, std::string_view bytes) {
    if (*alive) on_output(process_id, stream_of(kind), bytes);
  };
  events.on_output_end = [this, alive, process_id](channel::OutputKind kind) {
    if (!*alive) return;
    if (Process* p = find(process_id)) {
      OutputStream s = stream_of(kind);
      if (auto tail = p->encoder(s).flush(); !tail.empty()) events_.process_output(process_id, s, tail);
    }
  };
  events.on_exit = [this, alive, process_id](const wire::ProcessExited& exited) {
    if (!*alive) return;
    Process* p = find(process_id);
    if (!p) return;
    on_exit(process_id, ProcessExit{exited.exit_code, exited.signal, p->over_limit ? ProcessEndReason::kOutputLimit : ProcessEndReason::kNone});
  };
  link_->agent().start_process(params, std::move(events), [this, alive, process_id, pending](Result<wire::ProcessStartResult> r) {
    if (!*alive) return answer_start(pending, make_error(ErrorCode::kWrongState, "the sandbox ended before process " + process_id + " started"));
    Process* p = find(process_id);
    if (!r) {
      processes_.erase(process_id);
      return answer_start(pending, r.error());
    }
    if (p) {
      p->pid = r->pid;
      if (p->paused && link_) link_->agent().pause_output(p->pid, true);
    }
    answer_start(pending, {});
  });
}

void Sandbox::on_output(const std::string& process_id, OutputStream stream, std::string_view bytes) {
  Process* p = find(process_id);
  if (!p || p->over_limit) return;
  if (p->pty) {
    auto now = std::chrono::steady_clock::now();
    if (now - p->window_start >= kPtyOutputWindow) {
      p->window_start = now;
      p->output_bytes = 0;
    }
  }
  std::uint64_t room = limits_.max_output_bytes - std::min(limits_.max_output_bytes, p->output_bytes);
  bool exceeds = bytes.size() > room;
  std::string_view allowed_bytes = exceeds ? bytes.substr(0, room) : bytes;
  p->output_bytes += allowed_bytes.size();
  if (!allowed_bytes.empty()) {
    events_.process_bytes(process_id, stream, allowed_bytes);
    if (auto chunk = p->encoder(stream).encode(allowed_bytes); !chunk.empty()) events_.process_output(process_id, stream, chunk);
  }
  if (exceeds) {
    p->over_limit = true;
    std::string within = p->pty ? " bytes within " + std::to_string(kPtyOutputWindow.count()) + " s (resources.maxOutputBytes, per window on a terminal)"
                                : " bytes (resources.maxOutputBytes)";
    report_limit(LimitEvent{LimitKind::kOutput,
                            "process " + process_id + " wrote more than its output limit of " + std::to_string(limits_.max_output_bytes) +
                                within + " and is killed",
                            process_id, static_cast<std::int64_t>(limits_.max_output_bytes)});
    if (p->pid && link_) link_->agent().signal(p->pid, SIGKILL, [](Result<void>) {});
  }
}

void Sandbox::on_exit(const std::string& process_id, ProcessExit exit) {
  Process* p = find(process_id);
  if (!p) return;
  if (p->paused) {
    p->pending_exit = exit;  // output the channel still holds comes first (pause_output)
    return;
  }
  finish_process(process_id, exit);
}

void Sandbox::pause_output(const std::string& process_id, bool paused) {
  Process* p = find(process_id);
  if (!p || p->paused == paused) return;
  p->paused = paused;
  auto alive = alive_;
  if (p->pid && link_) link_->agent().pause_output(p->pid, paused);  // resuming delivers what was held, now
  if (!*alive || paused) return;
  p = find(process_id);
  if (p && p->pending_exit && !p->paused) finish_process(process_id, *p->pending_exit);
}

std::vector<ProcessInfo> Sandbox::processes() const {
  std::vector<ProcessInfo> out(exited_.begin(), exited_.end());
  for (const auto& [id, p] : processes_) out.push_back(p->info);
  auto number = [](const std::string& id) { return id.size() > 2 ? std::strtoull(id.c_str() + 2, nullptr, 10) : 0; };
  std::sort(out.begin(), out.end(), [&](const ProcessInfo& a, const ProcessInfo& b) { return number(a.process_id) < number(b.process_id); });
  return out;
}

std::optional<ProcessInfo> Sandbox::process_info(const std::string& process_id) const {
  if (auto it = processes_.find(process_id); it != processes_.end()) return it->second->info;
  for (const auto& info : exited_)
    if (info.process_id == process_id) return info;
  return std::nullopt;
}

void Sandbox::finish_process(const std::string& key, ProcessExit exit) {
  const std::string process_id = key;  // a copy: callers pass the map's own key (wind_down), which the erase below frees
  auto it = processes_.find(process_id);
  if (it == processes_.end()) return;
  std::unique_ptr<Process> p = std::move(it->second);
  processes_.erase(it);
  p->info.exit = exit;
  exited_.push_back(p->info);
  if (exited_.size() > kMaxExitedKept) exited_.pop_front();
  for (OutputStream s : {OutputStream::kStdout, OutputStream::kStderr, OutputStream::kPty})
    if (auto tail = p->encoder(s).flush(); !tail.empty()) events_.process_output(process_id, s, tail);
  events_.process_exited(process_id, exit);
}

Result<void> Sandbox::write_stdin(const std::string& process_id, std::string_view bytes) {
  if (auto ok = allowed(SandboxOp::kProcessIo); !ok) return ok;
  Process* p = find(process_id);
  if (!p || !p->pid) return make_error(ErrorCode::kWrongState, "process " + process_id + " has not started yet");
  return link_->agent().write_stdin(p->pid, bytes);
}

Result<void> Sandbox::close_stdin(const std::string& process_id) {
  if (auto ok = allowed(SandboxOp::kProcessIo); !ok) return ok;
  Process* p = find(process_id);
  if (!p || !p->pid) return make_error(ErrorCode::kWrongState, "process " + process_id + " has not started yet");
  if (p->pty) return link_->agent().write_stdin(p->pid, "\x04");  // a terminal's end of input
  return link_->agent().close_stdin(p->pid);
}

void Sandbox::resize(const std::string& process_id, int cols, int rows, std::function<void(Result<void>)> done) {
  if (auto ok = allowed(SandboxOp::kProcessIo); !ok) return done(ok.error());
  Process* p = find(process_id);
  if (!p || !p->pid) return done(make_error(ErrorCode::kWrongState, "process " + process_id + " has not started yet"));
  if (!p->pty) return done(make_error(ErrorCode::kInvalidInput, "process " + process_id + " has no terminal to resize (start it with pty)"));
  link_->agent().resize(p->pid, wire::TerminalSize{cols, rows}, std::move(done));
}

void Sandbox::signal(const std::string& process_id, int signal, std::function<void(Result<void>)> done) {
  if (auto ok = allowed(SandboxOp::kProcessIo); !ok) return done(ok.error());
  Process* p = find(process_id);
  if (!p || !p->pid) return done(make_error(ErrorCode::kWrongState, "process " + process_id + " has not started yet"));
  link_->agent().signal(p->pid, signal, std::move(done));
}

void Sandbox::stop(StopReason reason, const std::string& message, std::function<void()> done) {
  if (is_final(state_)) {
    if (done) done();
    return;
  }
  if (done) stopped_callbacks_.push_back(std::move(done));
  if (state_ == SandboxState::kStopping) return;
  wind_down(reason, message);
  if (vm_ && vm_->running()) return vm_->kill();  // vm_exited() finishes
  finalize();
}

void Sandbox::vm_exited(const vm::VmExit& exit) {
  if (state_ == SandboxState::kStopping) return finalize();
  if (is_final(state_)) return;
  // QEMU went away on its own: `lockroom kill`, or the guest crashed or was killed.
  if (exit.killed_by_pid) wind_down(StopReason::kKilled, exit.reason);
  else wind_down(StopReason::kGuestCrashed, "the guest stopped: " + exit.reason);
  finalize();
}

void Sandbox::channel_failed(const std::string& message) {
  if (state_ != SandboxState::kReady || channel_grace_) return;
  stop_message_ = message;
  channel_grace_ = new_handle<uv_timer_t>(this);
  uv_timer_init(loop_, channel_grace_);
  uv_timer_start(channel_grace_, [](uv_timer_t* t) {
    auto* self = static_cast<Sandbox*>(t->data);
    if (self) self->stop(StopReason::kChannelError, self->stop_message_);
  }, 1000, 0);
}

void Sandbox::wind_down(StopReason reason, const std::string& message) {
  stop_message_ = message;
  set_state(SandboxState::kStopping, reason, message);
  close_handle(lifetime_);
  close_handle(health_);
  close_handle(channel_grace_);
  // Every process gets its exit, then the channel goes; QEMU last. A process whose start is
  // still unanswered gets no exit: its start answers an error instead (start_process).
  changes_.reset();
  for (auto it = processes_.begin(); it != processes_.end();) {
    if (it->second->pid != 0) {
      ++it;
      continue;
    }
    auto pending = it->second->start_done;
    std::string process_id = it->first;
    it = processes_.erase(it);
    answer_start(pending, make_error(ErrorCode::kWrongState, "the sandbox ended before process " + process_id + " started"));
  }
  while (!processes_.empty())
    finish_process(processes_.begin()->first, ProcessExit{std::nullopt, SIGKILL, ProcessEndReason::kSandboxGone});
  network_.reset();    // resets every guest connection
  workspace_.reset();  // fails its pending operations; none may use the agent after this
  close_and_release(std::move(link_));
}

Result<std::pair<SandboxWorkspace*, channel::AgentClient*>> Sandbox::workspace() {
  if (auto ok = allowed(SandboxOp::kReadFiles); !ok) return ok.error();
  if (!workspace_ || !link_)
    return make_error(ErrorCode::kWrongState, "sandbox " + id_ + " has no workspace: create it with `workspace` set to a folder");
  return std::make_pair(workspace_.get(), &link_->agent());
}

Result<channel::AgentClient*> Sandbox::files() {
  if (auto ok = allowed(SandboxOp::kReadFiles); !ok) return ok.error();
  if (!link_) return make_error(ErrorCode::kWrongState, "sandbox " + id_ + " has no guest link");
  return &link_->agent();
}

void Sandbox::finalize() {
  set_state(is_failure(reason_) ? SandboxState::kFailed : SandboxState::kGone, reason_, stop_message_);
  auto callbacks = std::move(stopped_callbacks_);
  for (auto& fn : callbacks) fn();
}

}  // namespace lockroom::core
