// AgentClient: requests, error mapping and processes; see agent_client.h (files are in
// agent_client_files.cpp).
#include "server/channel/agent_client.h"

#include "server/channel/agent_client_impl.h"

namespace lockroom::channel {

namespace agent_error = wire::agent_error;
namespace rpc_error = protocol::rpc_error;

Error agent_error_to_result(const std::string& method, const protocol::RpcError& error) {
  std::string message = error.message.size() > 500 ? error.message.substr(0, 500) + "..." : error.message;
  if (message.rfind(method, 0) != 0) message = method + ": " + message;
  ErrorCode code = ErrorCode::kInternal;
  switch (error.code) {
    case agent_error::kNotFound: code = ErrorCode::kNotFound; break;
    case agent_error::kPermissionDenied:
    case agent_error::kWrongType:
    case agent_error::kSpawnFailed:
    case rpc_error::kInvalidParams: code = ErrorCode::kInvalidInput; break;
    case agent_error::kTooLarge:
    case agent_error::kLimitReached: code = ErrorCode::kLimitExceeded; break;
    case agent_error::kProcessGone:
    case agent_error::kNotATerminal:
    case agent_error::kNotReady: code = ErrorCode::kWrongState; break;
    case agent_error::kIoError:
    case agent_error::kUnsupportedProtocol:
    case rpc_error::kRequestCancelled:
    case rpc_error::kRequestFailed: code = ErrorCode::kUnavailable; break;
    default: break;
  }
  return make_error(code, std::move(message));
}

AgentClient::AgentClient(GuestChannel& channel, AgentTimeouts timeouts) : channel_(channel), timeouts_(timeouts) {
  channel_.on_notification(wire::method::kProcessExited, [this](const json& params) { return on_exited(params); });
  channel_.on_notification(wire::method::kLimitReached, [this](const json& params) -> Result<void> {
    auto note = wire::parse_limit_reached(params);
    if (!note) return note.error();
    if (on_limit_reached_) on_limit_reached_(*note);
    return {};
  });
  channel_.on_notification(wire::method::kWorkspaceChanged, [this](const json& params) -> Result<void> {
    auto note = wire::parse_workspace_changed(params);
    if (!note) return note.error();
    if (checked_out_.count(note->path) && on_workspace_changed_) on_workspace_changed_(note->path);
    return {};
  });
}

AgentClient::~AgentClient() {
  *alive_ = false;
  channel_.on_notification(wire::method::kProcessExited, [](const json&) -> Result<void> { return {}; });
  channel_.on_notification(wire::method::kLimitReached, [](const json&) -> Result<void> { return {}; });
  channel_.on_notification(wire::method::kWorkspaceChanged, [](const json&) -> Result<void> { return {}; });
  for (auto& [pid, proc] : processes_)
    for (std::uint32_t s : {proc->streams.stdin_stream, proc->streams.stdout_stream, proc->streams.stderr_stream, proc->streams.pty_stream})
      if (s) channel_.detach(s);
}

void AgentClient::health(Done<wire::HealthResult> done) {
  request<wire::HealthResult>(wire::method::kHealth, json::object(), timeouts_.control, wire::parse_health_result, std::move(done));
}

void AgentClient::resume(const wire::ResumeParams& params, Done<wire::ResumeResult> done) {
  request<wire::ResumeResult>(wire::method::kGuestResume, wire::to_json(params), timeouts_.control, wire::parse_resume_result, std::move(done));
}

void AgentClient::set_limits(const wire::LimitsParams& params, Done<wire::LimitsResult> done) {
  request<wire::LimitsResult>(wire::method::kLimitsSet, wire::to_json(params), timeouts_.control, wire::parse_limits_result, std::move(done));
}

// --- processes

AgentClient::Proc* AgentClient::find(std::int64_t pid) {
  auto it = processes_.find(pid);
  return it == processes_.end() ? nullptr : it->second.get();
}

void AgentClient::start_process(const wire::ProcessStartParams& params, ProcessEvents events, Done<wire::ProcessStartResult> done) {
  bool pty = params.pty.has_value();
  std::weak_ptr<bool> alive = alive_;
  channel_.call(wire::method::kProcessStart, wire::to_json(params), timeouts_.process_start,
                [this, alive, pty, events = std::move(events), done = std::move(done)](rpc::CallOutcome outcome) mutable {
                  if (alive.expired()) return;
                  if (outcome.error) {
                    if (outcome.error->code == rpc_error::kRequestCancelled) lost_starts_++;
                    return done(agent_error_to_result(wire::method::kProcessStart, *outcome.error));
                  }
                  auto started = wire::parse_process_start_result(outcome.result, pty);
                  Result<void> bound = started ? bind_process(*started, pty, std::move(events)) : Result<void>(started.error());
                  if (!bound) {
                    std::string why = "malformed reply to process.start: " + bound.error().message;
                    channel_.fail(why);
                    return done(make_error(ErrorCode::kUnavailable, why));
                  }
                  done(std::move(started));
                });
}

Result<void> AgentClient::bind_process(const wire::ProcessStartResult& started, bool pty, ProcessEvents events) {
  if (processes_.count(started.pid))
    return make_error(ErrorCode::kInvalidInput, "pid " + std::to_string(started.pid) + " is already a running process");
  auto proc = std::make_unique<Proc>();
  proc->pid = started.pid;
  proc->pty = pty;
  proc->streams = started.streams;
  proc->events = std::move(events);
  std::int64_t pid = started.pid;
  std::weak_ptr<bool> alive = alive_;
  auto output = [this, alive, pid](OutputKind kind) {
    StreamHandlers h;
    h.on_data = [this, alive, pid, kind](std::string_view bytes) {
      if (alive.expired()) return;
      if (Proc* p = find(pid); p && p->events.on_output) p->events.on_output(kind, bytes);
    };
    h.on_end = [this, alive, pid, kind] {
      if (!alive.expired()) output_ended(pid, kind);
    };
    h.on_reset = [this, alive, pid, kind](std::uint32_t, const std::string&) {
      if (!alive.expired()) output_ended(pid, kind);
    };
    if (kind == OutputKind::kPty) {
      h.on_writable = [this, alive, pid] {
        if (alive.expired()) return;
        if (Proc* p = find(pid); p && p->on_writable) p->on_writable();
      };
    }
    return h;
  };
  processes_[pid] = std::move(proc);
  Proc& p = *processes_[pid];
  auto undo = [this, pid](Error e) -> Result<void> {
    processes_.erase(pid);
    return e;
  };
  if (pty) {
    if (auto r = channel_.attach(started.streams.pty_stream, output(OutputKind::kPty)); !r) return undo(r.error());
    p.open_outputs = 1;
    return {};
  }
  StreamHandlers input;
  input.on_reset = [this, alive, pid](std::uint32_t, const std::string&) {
    if (alive.expired()) return;
    if (Proc* q = find(pid)) q->stdin_open = false;
  };
  input.on_writable = [this, alive, pid] {
    if (alive.expired()) return;
    if (Proc* q = find(pid); q && q->on_writable) q->on_writable();
  };
  if (auto r = channel_.attach(started.streams.stdin_stream, std::move(input)); !r) return undo(r.error());
  if (auto r = channel_.attach(started.streams.stdout_stream, output(OutputKind::kStdout)); !r) return undo(r.error());
  if (auto r = channel_.attach(started.streams.stderr_stream, output(OutputKind::kStderr)); !r) return undo(r.error());
  p.open_outputs = 2;
  // The host never writes to stdout or stderr: close its direction now.
  channel_.close_stream(started.streams.stdout_stream);
  channel_.close_stream(started.streams.stderr_stream);
  return {};
}

void AgentClient::output_ended(std::int64_t pid, OutputKind kind) {
  Proc* p = find(pid);
  if (!p) return;
  p->open_outputs--;
  if (kind == OutputKind::kPty) {
    // The terminal is gone: close our direction too, so neither side keeps the stream.
    p->stdin_open = false;
    channel_.close_stream(p->streams.pty_stream);
  }
  auto alive = alive_;
  if (p->events.on_output_end) p->events.on_output_end(kind);
  if (*alive) maybe_forget(pid);
}

Result<void> AgentClient::on_exited(const json& params) {
  auto exited = wire::parse_process_exited(params);
  if (!exited) return exited.error();
  Proc* p = find(exited->pid);
  if (!p) {
    if (lost_starts_ > 0) return {};  // a process whose start we stopped waiting for
    return make_error(ErrorCode::kInvalidInput, "pid " + std::to_string(exited->pid) + " was never started by this server");
  }
  if (p->exited) return make_error(ErrorCode::kInvalidInput, "pid " + std::to_string(exited->pid) + " exited twice");
  p->exited = true;
  auto alive = alive_;
  if (p->events.on_exit) p->events.on_exit(*exited);
  if (*alive) maybe_forget(exited->pid);
  return {};
}

void AgentClient::maybe_forget(std::int64_t pid) {
  Proc* p = find(pid);
  if (!p || !p->exited || p->open_outputs > 0) return;
  if (!p->pty && p->stdin_open) channel_.reset_stream(p->streams.stdin_stream, wire::reset_code::kProcessExited, "the process has exited");
  processes_.erase(pid);
}

Result<void> AgentClient::write_stdin(std::int64_t pid, std::string_view bytes) {
  Proc* p = find(pid);
  if (!p) return make_error(ErrorCode::kNotFound, "no running process " + std::to_string(pid) + " in this sandbox");
  if (!p->stdin_open) return make_error(ErrorCode::kWrongState, "the input of process " + std::to_string(pid) + " is closed");
  return channel_.write(p->pty ? p->streams.pty_stream : p->streams.stdin_stream, bytes);
}

void AgentClient::on_stdin_writable(std::int64_t pid, std::function<void()> fn) {
  if (Proc* p = find(pid)) p->on_writable = std::move(fn);
}

Result<void> AgentClient::close_stdin(std::int64_t pid) {
  Proc* p = find(pid);
  if (!p) return make_error(ErrorCode::kNotFound, "no running process " + std::to_string(pid) + " in this sandbox");
  if (p->pty) return make_error(ErrorCode::kWrongState, "process " + std::to_string(pid) + " runs on a terminal: send \"\\x04\" (Ctrl-D) to end its input");
  if (!p->stdin_open) return {};
  p->stdin_open = false;
  channel_.close_stream(p->streams.stdin_stream);
  return {};
}

void AgentClient::pause_output(std::int64_t pid, bool paused) {
  Proc* p = find(pid);
  if (!p) return;
  for (std::uint32_t s : {p->streams.stdout_stream, p->streams.stderr_stream, p->streams.pty_stream})
    if (s) channel_.pause(s, paused);
}

void AgentClient::signal(std::int64_t pid, int signal, Done<void> done) {
  wire::ProcessSignalParams params{pid, signal, true};
  request<void>(wire::method::kProcessSignal, wire::to_json(params), timeouts_.control, parse_empty, std::move(done));
}

void AgentClient::resize(std::int64_t pid, wire::TerminalSize size, Done<void> done) {
  wire::ProcessResizeParams params{pid, size};
  request<void>(wire::method::kProcessResize, wire::to_json(params), timeouts_.control, parse_empty, std::move(done));
}

}  // namespace lockroom::channel
