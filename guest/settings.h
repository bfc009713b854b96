// The agent's settings: from its command line, and (in a guest) from the kernel command line.
//
// Kernel command line (read from /proc/cmdline; flags given to the agent win):
//   lockroom.port=NAME       virtio-serial port name to serve (default "agent")
//   lockroom.maxprocs=N      process-count limit for everything started through the agent
//   lockroom.cgroup=0|1      use (or not) a cgroup v2 pids controller for that limit
//   lockroom.log=LEVEL       debug | info | warning | error
// Flags (for tests on the host and for debugging):
//   --port PATH | --port-name NAME | --connect UNIX_SOCKET | --fd N
//   --no-clock (guest.resume leaves the wall clock alone), --cgroup-root DIR, --max-procs N,
//   --log-level LEVEL, --version, --help
// Pure parsing; no I/O except what the caller passes in.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "guest/log.h"
#include "server/common/result.h"

namespace lockroom::agent {

enum class TransportKind { kPortName, kPortPath, kConnect, kFd };

struct AgentSettings {
  TransportKind transport = TransportKind::kPortName;
  std::string port_name = "agent";
  std::string path;  // --port PATH or --connect PATH
  int fd = -1;
  bool set_clock = true;
  std::optional<std::string> cgroup_root;  // where to build the pids cgroups (PID 1 default: /sys/fs/cgroup)
  bool cgroup = true;                      // try cgroups at all
  std::optional<std::int64_t> max_processes;
  LogLevel log_level = LogLevel::kInfo;
  bool show_version = false;
  bool show_help = false;
};

// Applies `lockroom.*` words of a kernel command line to `settings`.
void apply_kernel_cmdline(const std::string& cmdline, AgentSettings& settings);
// Applies the agent's own flags (argv without the program name).
Result<void> apply_flags(const std::vector<std::string>& args, AgentSettings& settings);
std::string usage();

}  // namespace lockroom::agent
