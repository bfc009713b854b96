// Process-count limits via cgroup v2 pids or RLIMIT_NPROC, the disk limit, and the watch of
// both; see process_limits.h.
#include "guest/process_limits.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "guest/log.h"
#include "protocol/channel/messages.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

namespace lockroom::agent {

namespace channel = protocol::channel;
using Clock = std::chrono::steady_clock;

namespace {

std::string read_small_file(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// The pid in the cgroup `dir` that leads its own session: the process process.start made
// (every start calls setsid), as opposed to its children. nullopt once it has exited.
std::optional<std::int64_t> session_leader(const std::string& dir) {
  std::istringstream procs(read_small_file(dir + "/cgroup.procs"));
  std::int64_t pid = 0;
  while (procs >> pid) {
    std::string stat = read_small_file("/proc/" + std::to_string(pid) + "/stat");
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 1));
    std::string state;
    std::int64_t ppid = 0, pgrp = 0, session = 0;
    if (fields >> state >> ppid >> pgrp >> session && session == pid) return pid;
  }
  return std::nullopt;
}

}  // namespace

bool ProcessLimits::write_file(const std::string& path, const std::string& text, std::string* error) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  bool ok = fd >= 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (!ok && error) *error = "writing \"" + text + "\" to " + path + ": " + std::strerror(errno);
  if (fd >= 0) ::close(fd);
  return ok;
}

std::optional<std::string> ProcessLimits::setup(const std::string& root, bool pid1) {
  struct statfs fs{};
  if (::statfs(root.c_str(), &fs) != 0 || fs.f_type != CGROUP2_SUPER_MAGIC) {
    if (!pid1) return root + " is not a cgroup2 mount";
    ::mkdir(root.c_str(), 0755);
    if (::mount("cgroup2", root.c_str(), "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
      return std::string("cannot mount cgroup2 on ") + root + ": " + std::strerror(errno);
  }
  std::ifstream controllers(root + "/cgroup.controllers");
  std::string all((std::istreambuf_iterator<char>(controllers)), std::istreambuf_iterator<char>());
  if (all.find("pids") == std::string::npos) return "the pids controller is not available in " + root;
  std::string error;
  if (!write_file(root + "/cgroup.subtree_control", "+pids", &error)) return error;
  std::string work = root + "/lockroom-work";
  if (::mkdir(work.c_str(), 0755) != 0 && errno != EEXIST) return "cannot create " + work + ": " + std::strerror(errno);
  if (!write_file(work + "/cgroup.subtree_control", "+pids", &error)) return error;
  work_ = work;
  return std::nullopt;
}

void ProcessLimits::init(const AgentSettings& settings, bool pid1) {
  pid1_ = pid1;
  disk_.init("/", pid1);
  global_ = settings.max_processes;
  if (settings.cgroup && (pid1 || settings.cgroup_root)) {
    std::string root = settings.cgroup_root.value_or("/sys/fs/cgroup");
    if (auto problem = setup(root, pid1)) {
      log_warn("process limits fall back to RLIMIT_NPROC (not enforced for root): " + *problem);
    } else {
      cgroup_ = true;
      log_info("process limits use the cgroup v2 pids controller in " + work_);
    }
  }
  if (cgroup_ && global_) write_file(work_ + "/pids.max", std::to_string(*global_));
}

Outcome ProcessLimits::set(const json& params) {
  auto parsed = channel::parse_limits_params(params);
  if (!parsed) return invalid_params(parsed.error());
  if (parsed->max_processes) {
    if (cgroup_ && !write_file(work_ + "/pids.max", std::to_string(*parsed->max_processes))) {
      return errno_error(errno, "limits.set: writing " + work_ + "/pids.max");
    }
    global_ = parsed->max_processes;
  }
  if (parsed->max_disk_mib) {
    if (auto error = disk_.set(*parsed->max_disk_mib)) return *error;
  }
  channel::LimitsResult result{global_, enforcement(), disk_.max_mib(), disk_.enforcement()};
  return channel::to_json(result);
}

std::optional<std::int64_t> ProcessLimits::current_processes() const {
  if (!cgroup_) return std::nullopt;
  std::string text = read_small_file(work_ + "/pids.current");
  if (text.empty()) return std::nullopt;
  return std::strtoll(text.c_str(), nullptr, 10);
}

std::variant<ProcessLimits::Placement, RpcError> ProcessLimits::place(std::optional<std::int64_t> per_process) {
  Placement placement;
  if (!cgroup_) {
    placement.rlimit = per_process ? per_process : global_;
    return placement;
  }
  // Joining a cgroup is never refused by pids.max, so a start at the limit would exceed it.
  if (auto current = current_processes(); current && global_ && *current >= *global_) {
    watch_.forks_refused(std::nullopt, global_, false, Clock::now());
    return make_rpc_error(channel::agent_error::kLimitReached,
                          "process.start: the sandbox already runs " + std::to_string(*current) + " processes, its limit (maxProcesses = " +
                              std::to_string(*global_) + "); wait for some to exit",
                          json{{"limit", "processes"}, {"value", *global_}});
  }
  std::string dir = work_ + "/p" + std::to_string(next_++);
  if (::mkdir(dir.c_str(), 0755) != 0) return errno_error(errno, "process.start: creating cgroup " + dir);
  if (per_process && !write_file(dir + "/pids.max", std::to_string(*per_process))) {
    int err = errno;
    ::rmdir(dir.c_str());
    return errno_error(err, "process.start: setting pids.max in " + dir);
  }
  placement.procs_fd = ::open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  if (placement.procs_fd < 0) {
    int err = errno;
    ::rmdir(dir.c_str());
    return errno_error(err, "process.start: opening " + dir + "/cgroup.procs");
  }
  placement.dir = dir;
  cgroups_[dir] = Cgroup{per_process, 0};
  return placement;
}

void ProcessLimits::placed(Placement& placement) {
  if (placement.procs_fd >= 0) ::close(placement.procs_fd);
  placement.procs_fd = -1;
}

void ProcessLimits::remove(const std::string& dir) {
  if (auto it = cgroups_.find(dir); it != cgroups_.end()) {
    check_cgroup(dir, it->second, Clock::now());  // forks refused since the last look still count
    cgroups_.erase(it);
  }
  if (!dir.empty() && ::rmdir(dir.c_str()) != 0 && errno != ENOENT)
    log_debug("cgroup " + dir + " stays for now: " + std::strerror(errno));
}

void ProcessLimits::kill_all() {
  if (cgroup_) write_file(work_ + "/cgroup.kill", "1");
}

std::optional<std::int64_t> ProcessLimits::read_counter(const std::string& path, bool vmstat, const char* name) const {
  std::string text = read_small_file(path);
  return vmstat ? vmstat_counter(text, name) : pids_events_max(text);
}

void ProcessLimits::check_cgroup(const std::string& dir, Cgroup& cgroup, Clock::time_point now) {
  auto refused = read_counter(dir + "/pids.events", false);
  if (!refused || *refused <= cgroup.refused) return;
  cgroup.refused = *refused;
  bool own = cgroup.limit && (!global_ || *cgroup.limit <= *global_);
  watch_.forks_refused(session_leader(dir), own ? cgroup.limit : global_, own, now);
}

void ProcessLimits::watch(Clock::time_point now) {
  if (now < next_look_) return;
  next_look_ = now + LimitWatch::kPeriod;
  if (disk_.enforced()) {
    if (auto usage = disk_.usage()) watch_.disk(*usage, disk_.base_bytes(), disk_.max_mib(), now);
  }
  if (cgroup_) {
    for (auto& [dir, cgroup] : cgroups_) check_cgroup(dir, cgroup, now);
    // Kernels that count a refusal where the limit is (not in the forking process's cgroup).
    if (auto refused = read_counter(work_ + "/pids.events", false); refused && *refused > work_refused_) {
      work_refused_ = *refused;
      watch_.forks_refused(std::nullopt, global_, false, now);
    }
  }
  if (pid1_) {
    if (auto kills = read_counter("/proc/vmstat", true, "oom_kill")) watch_.oom_kills(*kills, now);
  }
}

int ProcessLimits::watch_timeout_ms(Clock::time_point now) const {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next_look_ - now).count();
  return static_cast<int>(std::clamp<long long>(left, 0, LimitWatch::kPeriod.count()));
}

}  // namespace lockroom::agent
