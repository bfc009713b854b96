// Connecting to the shared server; see shared_connect.h.
#include "server/serve/shared_connect.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <thread>

#include <spdlog/spdlog.h>

#include "server/serve/server_dir.h"

extern char** environ;

namespace lockroom::serve {

namespace fs = std::filesystem;

namespace {

std::string errno_text() { return std::strerror(errno); }

// A connected socket to `path`, or -1 with errno set.
int connect_to(const fs::path& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    int saved = errno;
    ::close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

// Starts `lockroom serve --server …` in its own session, detached from this process (a double
// fork: the server is nobody's child here), its stdin on /dev/null, stdout and stderr appended
// to the log.
Result<void> start_server(const SharedServerTarget& options) {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return make_error(ErrorCode::kUnavailable, "cannot find the lockroom binary (/proc/self/exe): " + ec.message());
  std::vector<std::string> args{self.string(), "serve", "--server", "--server-dir", options.dir.string()};
  args.insert(args.end(), options.server_args.begin(), options.server_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  fs::create_directories(options.log.parent_path(), ec);
  int log = ::open(options.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (log < 0) return make_error(ErrorCode::kUnavailable, "cannot open the server log " + options.log.string() + ": " + errno_text());
  int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_t child = ::fork();
  if (child < 0) {
    ::close(log);
    ::close(null);
    return make_error(ErrorCode::kUnavailable, "cannot start the lockroom server: fork: " + errno_text());
  }
  if (child == 0) {
    ::setsid();
    if (::fork() != 0) ::_exit(0);
    ::dup2(null, 0);
    ::dup2(log, 1);
    ::dup2(log, 2);
    ::chdir("/");
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(log);
  ::close(null);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return {};
}

// Connects to the server, starting it first when nobody answers.
Result<int> connect_or_start(const SharedServerTarget& options, const fs::path& socket) {
  if (int fd = connect_to(socket); fd >= 0) return fd;
  int lock = ::open(server_lock_path(options.dir).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0) return make_error(ErrorCode::kUnavailable, "cannot open " + server_lock_path(options.dir).string() + ": " + errno_text());
  while (::flock(lock, LOCK_EX) != 0 && errno == EINTR) {
  }
  auto unlock = [lock] { ::close(lock); };  // closing drops the lock
  // Another bridge may have started it while this one waited for the lock.
  if (int fd = connect_to(socket); fd >= 0) {
    unlock();
    return fd;
  }
  spdlog::info("starting the lockroom server (log: {})", options.log.string());
  if (auto started = start_server(options); !started) {
    unlock();
    return started.error();
  }
  auto deadline = std::chrono::steady_clock::now() + options.start_timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (int fd = connect_to(socket); fd >= 0) {
      unlock();
      return fd;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  unlock();
  return make_error(ErrorCode::kUnavailable, "the lockroom server did not come up within " +
                                                 std::to_string(options.start_timeout.count() / 1000) + " s at " + socket.string() +
                                                 "; see its log " + options.log.string());
}

// Reads the welcome line (nothing else comes before it: the server sends the editor nothing
// until the editor has spoken).
Result<Welcome> read_welcome_line(int fd, std::chrono::milliseconds timeout) {
  std::string line;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  char c = 0;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return make_error(ErrorCode::kUnavailable, "the lockroom server did not answer the hello in time");
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_error(ErrorCode::kCancelled, "the lockroom server closed the connection before its welcome");
    if (c == '\n') break;
    line.push_back(c);
    if (line.size() > 64 * 1024) return make_error(ErrorCode::kUnavailable, "the lockroom server's welcome is too long");
  }
  return read_welcome(line);
}

std::map<std::string, std::string> environment() {
  std::map<std::string, std::string> out;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    out.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return out;
}

}  // namespace

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, -1);
      continue;
    }
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

Result<SharedConnection> connect_shared_server(const SharedServerTarget& target) {
  if (auto dir = ensure_private_dir(target.dir); !dir) return dir.error();
  fs::path socket = server_socket_path(target.dir, target.version);
  Hello hello{target.framing, target.max_message_bytes, static_cast<int>(::getpid()), environment()};
  std::string hello_text = hello_line(hello);
  for (int attempt = 1;; ++attempt) {
    auto fd = connect_or_start(target, socket);
    if (!fd) return fd.error();
    int sock = *fd;
    if (!write_all(sock, hello_text.data(), hello_text.size())) {
      ::close(sock);
      if (attempt < 3) continue;
      return make_error(ErrorCode::kUnavailable, "cannot talk to the lockroom server at " + socket.string() + ": " + errno_text());
    }
    auto welcome = read_welcome_line(sock, target.start_timeout);
    if (!welcome) {
      ::close(sock);
      if (welcome.error().code == ErrorCode::kCancelled && attempt < 3) continue;
      return welcome.error();
    }
    return SharedConnection{sock, std::move(*welcome)};
  }
}

}  // namespace lockroom::serve
