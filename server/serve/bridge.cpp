// The stdio bridge; see bridge.h.
#include "server/serve/bridge.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include <spdlog/spdlog.h>

#include "server/serve/shared_connect.h"

namespace lockroom::serve {

namespace {

std::string errno_text() { return std::strerror(errno); }

// Pumps until the session ends; returns the exit code.
int pump(int sock, const BridgeOptions& options, const Welcome& welcome) {
  bool stdin_open = true;
  std::string trailer;  // after the NUL: the end record
  bool in_trailer = false;
  std::vector<char> buffer(64 * 1024);
  while (true) {
    pollfd fds[2] = {{sock, POLLIN, 0}, {stdin_open ? options.in_fd : -1, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("lockroom bridge: poll failed: {}", errno_text());
      return 1;
    }
    if (fds[1].revents) {
      ssize_t n = ::read(options.in_fd, buffer.data(), buffer.size());
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n > 0) {
        if (!write_all(sock, buffer.data(), static_cast<std::size_t>(n))) {
          // The server is gone; what it sent last is read below.
          stdin_open = false;
        }
      } else {
        // The editor closed our input: the server ends the session and sends the end record.
        stdin_open = false;
        ::shutdown(sock, SHUT_WR);
      }
    }
    if (fds[0].revents) {
      ssize_t n = ::read(sock, buffer.data(), buffer.size());
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        if (in_trailer) {
          if (auto code = read_end_record(trailer)) return *code;
        }
        spdlog::error("lockroom bridge: the lockroom server (pid {}) went away{}; this window's sandboxes went with it. "
                      "Its log: {}",
                      welcome.pid, n < 0 ? " (" + errno_text() + ")" : "", welcome.log);
        return 1;
      }
      std::string_view data(buffer.data(), static_cast<std::size_t>(n));
      if (!in_trailer) {
        auto nul = data.find('\0');
        std::string_view out = data.substr(0, nul);
        if (!out.empty() && !write_all(options.out_fd, out.data(), out.size())) {
          spdlog::info("lockroom bridge: the editor closed our output ({}); leaving", errno_text());
          return 1;
        }
        if (nul == std::string_view::npos) continue;
        in_trailer = true;
        data = data.substr(nul + 1);
      }
      trailer.append(data);
      if (auto code = read_end_record(trailer)) return *code;
    }
  }
}

}  // namespace

int run_bridge(const BridgeOptions& options) {
  std::signal(SIGPIPE, SIG_IGN);
  auto connected = connect_shared_server(options);
  if (!connected) {
    spdlog::error("lockroom: {}", connected.error().message);
    return 1;
  }
  spdlog::info("connected to the lockroom server (pid {}, log {})", connected->welcome.pid, connected->welcome.log);
  int code = pump(connected->fd, options, connected->welcome);
  ::close(connected->fd);
  return code;
}

}  // namespace lockroom::serve
