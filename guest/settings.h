// The agent's settings: from its command line, and (in a guest) from the kernel command line.
//
// Kernel command line (read from /proc/cmdline; flags given to the agent win):
//   lockroom.port=NAME       virtio-serial port name to serve (default "agent")
//   lockroom.maxprocs=N      process-count limit for everything started through the agent
//   lockroom.cgroup=0|1      use (or not) a cgroup v2 pids controller for that limit
//   lockroom.log=LEVEL       debug | info | warning | error
//   lockroom.net.http=PORT, lockroom.net.socks=PORT, lockroom.net.dns=PORT (0: off),
//   lockroom.net.max=N       the loopback proxies net.enable starts (guest/net_service.h)
// Flags (for tests on the host and for debugging):
//   --port PATH | --port-name NAME | --connect UNIX_SOCKET | --fd N
//   --no-clock (guest.resume leaves the wall clock alone), --cgroup-root DIR, --max-procs N,
//   --log-level LEVEL, --version, --help,
//   --net-http-port N, --net-socks-port N, --net-dns-port N (0: any free port; -1: off),
//   --net-max-connections N, --net-cert-dir DIR
// Pure parsing; no I/O except what the caller passes in.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "guest/log.h"
#include "server/common/result.h"

namespace lockroom::agent {

// The loopback proxies of net.enable. Ports are on 127.0.0.1; 0 means any free port (tests on a
// host); the DNS refuser may be off (nullopt).
struct NetSettings {
  std::int64_t http_port = 3128;
  std::int64_t socks_port = 1080;
  std::optional<std::int64_t> dns_port = 53;
  std::int64_t max_connections = 256;
  std::string cert_dir = "/etc/ssl/certs";  // where net.trust writes the CA and the bundle
};

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
  NetSettings net;
  bool show_version = false;
  bool show_help = false;
};

// Applies `lockroom.*` words of a kernel command line to `settings`.
void apply_kernel_cmdline(const std::string& cmdline, AgentSettings& settings);
// Applies the agent's own flags (argv without the program name).
Result<void> apply_flags(const std::vector<std::string>& args, AgentSettings& settings);
std::string usage();

}  // namespace lockroom::agent
