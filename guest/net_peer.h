// Which guest program opened a proxied connection: the peer of an accepted loopback socket.
//
// The kernel tells the agent the client's source port (accept), not its process: the socket's
// inode is found in /proc/net/tcp (local 127.0.0.1:<client port>, remote 127.0.0.1:<proxy
// port>), then the process holding it among /proc/<pid>/fd/* (the lowest pid when several share
// it after a fork). The command is /proc/<pid>/cmdline with its NULs as spaces (else comm),
// bytes outside printable ASCII as '?', clipped to kMaxClientCommand bytes. `started` is the
// pid of its ancestor whose parent is the agent (a process the agent started), if any.
//
// A blocking walk of /proc, bounded (at most kMaxPids processes and kMaxFds descriptors each):
// small in a sandbox; it runs once per connection at accept. Best effort: nullopt when the
// program is gone or hidden. Loop thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace lockroom::agent {

struct PeerProcess {
  std::int64_t pid = 0;
  std::string command;
  std::optional<std::int64_t> started;
};

inline constexpr std::size_t kMaxPids = 4096;
inline constexpr std::size_t kMaxFds = 4096;

// `proc` is normally "/proc". `agent_pid` is the agent's own pid (for `started`).
std::optional<PeerProcess> find_peer_process(std::uint16_t client_port, std::uint16_t proxy_port, std::int64_t agent_pid,
                                             const std::string& proc = "/proc");

// A command line from /proc's NUL-separated cmdline bytes, made printable and bounded.
std::string printable_command(std::string_view cmdline, std::size_t max);

}  // namespace lockroom::agent
