// ProcessLimits: limits.set and what enforces it inside the guest, and the watch that reports a
// limit being met (limit.reached).
//
// Processes. Preferred: a cgroup v2 "pids" controller. The agent builds <root>/lockroom-work
// (the global limit, from limits.set or lockroom.maxprocs=) with one child cgroup per
// process.start (its own limit), and each child joins its cgroup before exec; this binds root
// too, and lets the agent kill everything of a session at once (cgroup.kill). A start while the
// sandbox is already at its global limit is refused (limit reached), since joining a cgroup is
// not bounded by the kernel. Fallback when cgroups are unavailable (as on a host in tests):
// RLIMIT_NPROC on each started process, which the kernel does not enforce for root. hello and
// limits.set tell the host which one is in force.
// Disk: maxDiskMiB sizes the root tmpfs (guest/disk_limit.h).
// Watch: watch() looks once a second (disk usage, the cgroups' refused forks, OOM kills) and
// LimitWatch turns what it sees into one notification per episode.
// Loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>

#include "guest/disk_limit.h"
#include "guest/errors.h"
#include "guest/limit_watch.h"
#include "guest/settings.h"

namespace lockroom::agent {

class ProcessLimits {
 public:
  // Sets up cgroups when allowed and possible (as PID 1: mounts cgroup2 if needed), and, as
  // PID 1, the disk limit on "/".
  void init(const AgentSettings& settings, bool pid1);
  const char* enforcement() const { return cgroup_ ? "cgroup" : "rlimit"; }
  std::optional<std::int64_t> global() const { return global_; }
  Outcome set(const json& params);  // limits.set

  struct Placement {
    int procs_fd = -1;  // the child writes "0" here before exec
    std::string dir;    // its cgroup, removed when the process is gone
    std::optional<std::int64_t> rlimit;
  };
  std::variant<Placement, RpcError> place(std::optional<std::int64_t> per_process);
  void placed(Placement& placement);  // after the spawn: closes the descriptor
  void remove(const std::string& dir);
  // Kills every process in the workload cgroup (no-op without cgroups).
  void kill_all();

  // limit.reached: where to send it (the agent's connection), and the look at the limits,
  // which does I/O at most once per LimitWatch::kPeriod; call it every loop turn while a host
  // is attached. watch_timeout_ms(): how long the loop may sleep before the next look.
  void on_limit_reached(LimitWatch::Notify fn) { watch_.set_notify(std::move(fn)); }
  void watch(std::chrono::steady_clock::time_point now);
  int watch_timeout_ms(std::chrono::steady_clock::time_point now) const;

 private:
  struct Cgroup {
    std::optional<std::int64_t> limit;  // its own pids.max, when process.start set one
    std::int64_t refused = 0;           // pids.events "max" as last read
  };
  bool write_file(const std::string& path, const std::string& text, std::string* error = nullptr);
  std::optional<std::string> setup(const std::string& root, bool pid1);
  std::optional<std::int64_t> read_counter(const std::string& path, bool vmstat, const char* name = "") const;
  std::optional<std::int64_t> current_processes() const;
  void check_cgroup(const std::string& dir, Cgroup& cgroup, std::chrono::steady_clock::time_point now);

  bool cgroup_ = false;
  std::string work_;
  std::optional<std::int64_t> global_;
  std::uint64_t next_ = 1;
  std::map<std::string, Cgroup> cgroups_;  // by dir: the live process.start cgroups
  std::int64_t work_refused_ = 0;          // lockroom-work's own pids.events "max"
  bool pid1_ = false;
  DiskLimit disk_;
  LimitWatch watch_;
  std::chrono::steady_clock::time_point next_look_{};
};

}  // namespace lockroom::agent
