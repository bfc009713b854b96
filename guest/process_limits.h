// ProcessLimits: how many processes the host's commands may make inside the guest.
//
// Preferred: a cgroup v2 "pids" controller. The agent builds <root>/lockroom-work (the global
// limit, from limits.set or lockroom.maxprocs=) with one child cgroup per process.start (its own
// limit), and each child joins its cgroup before exec; this binds root too, and lets the agent
// kill everything of a session at once (cgroup.kill). Fallback when cgroups are unavailable (as
// on a host in tests): RLIMIT_NPROC on each started process, which the kernel does not enforce
// for root. hello and limits.set tell the host which one is in force.
// Loop thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "guest/errors.h"
#include "guest/settings.h"

namespace lockroom::agent {

class ProcessLimits {
 public:
  // Sets up cgroups when allowed and possible (as PID 1: mounts cgroup2 if needed).
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

 private:
  bool write_file(const std::string& path, const std::string& text, std::string* error = nullptr);
  std::optional<std::string> setup(const std::string& root, bool pid1);

  bool cgroup_ = false;
  std::string work_;
  std::optional<std::int64_t> global_;
  std::uint64_t next_ = 1;
};

}  // namespace lockroom::agent
