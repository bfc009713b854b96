// The program behind a proxied connection; see net_peer.h.
#include "guest/net_peer.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "protocol/channel/messages.h"

namespace lockroom::agent {

namespace {

std::string read_small(const std::string& path, std::size_t max) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string out(max, '\0');
  std::size_t got = 0;
  while (got < max) {
    ssize_t n = ::read(fd, out.data() + got, max - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  out.resize(got);
  return out;
}

// The inode of the TCP socket 127.0.0.1:<local> -> 127.0.0.1:<remote>, or 0.
unsigned long socket_inode(const std::string& proc, std::uint16_t local, std::uint16_t remote) {
  FILE* table = std::fopen((proc + "/net/tcp").c_str(), "re");
  if (!table) return 0;
  char line[512];
  unsigned long found = 0;
  std::fgets(line, sizeof line, table);  // the header
  while (!found && std::fgets(line, sizeof line, table)) {
    unsigned local_ip = 0, local_port = 0, remote_ip = 0, remote_port = 0, state = 0, uid = 0;
    unsigned long inode = 0;
    // "  0: 0100007F:9C40 0100007F:0C38 01 00000000:00000000 00:00000000 00000000  1000 0 12345 ..."
    int n = std::sscanf(line, " %*d: %8X:%4X %8X:%4X %2X %*X:%*X %*X:%*X %*X %u %*u %lu", &local_ip, &local_port, &remote_ip,
                        &remote_port, &state, &uid, &inode);
    if (n == 7 && local_port == local && remote_port == remote && local_ip == remote_ip) found = inode;
  }
  std::fclose(table);
  return found;
}

bool holds_socket(const std::string& proc, const char* pid, const std::string& link) {
  std::string dir = proc + "/" + pid + "/fd";
  DIR* fds = ::opendir(dir.c_str());
  if (!fds) return false;
  bool held = false;
  std::size_t seen = 0;
  char target[64];
  while (!held && seen++ < kMaxFds) {
    dirent* entry = ::readdir(fds);
    if (!entry) break;
    if (entry->d_name[0] == '.') continue;
    ssize_t n = ::readlinkat(::dirfd(fds), entry->d_name, target, sizeof target - 1);
    if (n <= 0) continue;
    held = link == std::string_view(target, static_cast<std::size_t>(n));
  }
  ::closedir(fds);
  return held;
}

std::int64_t parent_of(const std::string& proc, std::int64_t pid) {
  // /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may hold spaces and parentheses.
  std::string stat = read_small(proc + "/" + std::to_string(pid) + "/stat", 1024);
  std::size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  char state = 0;
  long long ppid = 0;
  if (std::sscanf(stat.c_str() + close + 1, " %c %lld", &state, &ppid) != 2) return 0;
  return ppid;
}

}  // namespace

std::string printable_command(std::string_view cmdline, std::size_t max) {
  while (!cmdline.empty() && cmdline.back() == '\0') cmdline.remove_suffix(1);
  std::string out;
  for (char c : cmdline.substr(0, max)) {
    auto u = static_cast<unsigned char>(c);
    out += c == '\0' ? ' ' : (u < 0x20 || u >= 0x7f) ? '?' : c;
  }
  return out;
}

std::optional<PeerProcess> find_peer_process(std::uint16_t client_port, std::uint16_t proxy_port, std::int64_t agent_pid,
                                             const std::string& proc) {
  unsigned long inode = socket_inode(proc, client_port, proxy_port);
  if (inode == 0) return std::nullopt;
  std::string link = "socket:[" + std::to_string(inode) + "]";
  DIR* dir = ::opendir(proc.c_str());
  if (!dir) return std::nullopt;
  std::int64_t best = 0;
  std::size_t seen = 0;
  while (seen < kMaxPids) {
    dirent* entry = ::readdir(dir);
    if (!entry) break;
    char* end = nullptr;
    long long pid = std::strtoll(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    ++seen;
    if (pid == agent_pid || (best && pid >= best)) continue;  // the agent holds the other end; keep the lowest pid
    if (holds_socket(proc, entry->d_name, link)) best = pid;
  }
  ::closedir(dir);
  if (!best) return std::nullopt;
  PeerProcess peer;
  peer.pid = best;
  std::string base = proc + "/" + std::to_string(best);
  std::size_t max = protocol::channel::kMaxClientCommand;
  peer.command = printable_command(read_small(base + "/cmdline", max + 1), max);
  if (peer.command.empty()) {
    std::string comm = read_small(base + "/comm", 64);
    while (!comm.empty() && comm.back() == '\n') comm.pop_back();
    peer.command = printable_command(comm, max);
  }
  // Up the parents to the agent's child: the process the agent started (bounded: a cycle is a lie).
  std::int64_t at = best;
  for (int depth = 0; depth < 64 && at > 1; ++depth) {
    std::int64_t parent = parent_of(proc, at);
    if (parent == agent_pid) {
      peer.started = at;
      break;
    }
    at = parent;
  }
  return peer;
}

}  // namespace lockroom::agent
