// The process.* methods and the table of started processes; see process_table.h.
#include "guest/process_table.h"

#include <sys/wait.h>

#include <algorithm>
#include <cerrno>

#include "guest/guest_user.h"
#include "guest/log.h"

namespace lockroom::agent {

namespace channel = protocol::channel;
namespace agent_error = channel::agent_error;

ProcessTable::ProcessTable(Connection& connection, ProcessLimits& limits, std::vector<std::string> base_env)
    : connection_(connection), limits_(limits), base_env_(std::move(base_env)) {}

std::vector<std::string> ProcessTable::environment(const channel::ProcessStartParams& params) const {
  std::vector<std::string> env = base_env_;
  auto unset = [&env](const std::string& name) {
    std::erase_if(env, [&](const std::string& e) { return e.size() > name.size() && e[name.size()] == '=' && e.compare(0, name.size(), name) == 0; });
  };
  // The user's own HOME, USER and LOGNAME (the session's or the request's win over them).
  const GuestUser& user = guest_user(params.user);
  if (user_switching()) {
    for (const char* name : {"HOME", "USER", "LOGNAME"}) unset(name);
    env.push_back(std::string("HOME=") + user.home);
    env.push_back(std::string("USER=") + user.name);
    env.push_back(std::string("LOGNAME=") + user.name);
  }
  if (session_env_) {
    for (const std::string& entry : session_env_()) {
      unset(entry.substr(0, entry.find('=')));
      env.push_back(entry);
    }
  }
  bool has_term = false;
  for (const auto& [name, value] : params.env) {
    unset(name);
    if (value) env.push_back(name + "=" + *value);
    if (name == "TERM") has_term = true;
  }
  if (params.pty && !has_term) {
    unset("TERM");
    env.push_back("TERM=xterm-256color");
  }
  return env;
}

Outcome ProcessTable::start(const json& params) {
  auto parsed = channel::parse_process_start_params(params);
  if (!parsed) return invalid_params(parsed.error());
  if (processes_.size() >= kMaxProcesses)
    return make_rpc_error(agent_error::kLimitReached, "the agent already tracks " + std::to_string(processes_.size()) +
                                                          " processes, its limit; wait for some to exit");
  auto process = std::make_unique<Process>(connection_, parsed->pty.has_value());
  auto streams = process->open_streams();
  if (!streams)
    return make_rpc_error(agent_error::kLimitReached, "process.start: cannot open its streams: " + streams.error().message);

  auto placement = limits_.place(parsed->max_processes);
  if (auto* error = std::get_if<RpcError>(&placement)) {
    process->refuse(error->message);
    return *error;
  }
  auto& place = std::get<ProcessLimits::Placement>(placement);

  SpawnRequest request;
  request.argv = parsed->argv;
  request.cwd = parsed->cwd;
  request.env = environment(*parsed);
  request.pty = parsed->pty.has_value();
  if (parsed->pty) {
    request.cols = static_cast<std::uint16_t>(parsed->pty->cols);
    request.rows = static_cast<std::uint16_t>(parsed->pty->rows);
  }
  request.max_processes = place.rlimit;
  request.cgroup_procs_fd = place.procs_fd;
  request.user = guest_user(parsed->user);
  auto spawned = spawn_process(request);
  limits_.placed(place);
  if (auto* error = std::get_if<RpcError>(&spawned)) {
    process->refuse("the process did not start");
    limits_.remove(place.dir);
    return *error;
  }
  auto& child = std::get<Spawned>(spawned);
  process->attach(child, place.dir);
  log_debug("started process " + std::to_string(child.pid) + ": " + parsed->argv[0]);
  channel::ProcessStartResult result{child.pid, *streams};
  processes_[child.pid] = std::move(process);
  return channel::to_json(result);
}

Process* ProcessTable::find(std::int64_t pid) {
  auto it = processes_.find(static_cast<pid_t>(pid));
  return it == processes_.end() ? nullptr : it->second.get();
}

Outcome ProcessTable::resize(const json& params) {
  auto parsed = channel::parse_process_resize_params(params);
  if (!parsed) return invalid_params(parsed.error());
  Process* p = find(parsed->pid);
  if (!p) return make_rpc_error(agent_error::kNotFound, "process.resize: no process " + std::to_string(parsed->pid) + " was started by this agent");
  return p->resize(parsed->size.cols, parsed->size.rows);
}

Outcome ProcessTable::signal(const json& params) {
  auto parsed = channel::parse_process_signal_params(params);
  if (!parsed) return invalid_params(parsed.error());
  Process* p = find(parsed->pid);
  if (!p) return make_rpc_error(agent_error::kNotFound, "process.signal: no process " + std::to_string(parsed->pid) + " was started by this agent");
  return p->signal(parsed->signal, parsed->group);
}

void ProcessTable::add_polls(PollSet& set) {
  for (auto& [pid, process] : processes_) process->add_polls(set);
}

void ProcessTable::reap() {
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid < 0 && errno == EINTR) continue;
    if (pid <= 0) return;
    if (Process* p = find(pid)) {
      p->on_reaped(status);
    } else {
      log_debug("reaped orphan " + std::to_string(pid));
    }
  }
}

void ProcessTable::advance() {
  auto now = Process::Clock::now();
  for (auto it = processes_.begin(); it != processes_.end();) {
    if (it->second->advance(now)) {
      limits_.remove(it->second->cgroup());
      it = processes_.erase(it);
    } else {
      ++it;
    }
  }
}

int ProcessTable::timeout_ms() const {
  std::optional<Process::Clock::time_point> next;
  for (const auto& [pid, process] : processes_) {
    auto d = process->deadline();
    if (d && (!next || *d < *next)) next = d;
  }
  if (!next) return -1;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*next - Process::Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left + 1, 0, 60000));
}

void ProcessTable::abandon_all() {
  for (auto& [pid, process] : processes_) process->abandon();
  limits_.kill_all();
}

std::size_t ProcessTable::running() const {
  return static_cast<std::size_t>(std::count_if(processes_.begin(), processes_.end(), [](const auto& p) { return !p.second->reaped(); }));
}

}  // namespace lockroom::agent
