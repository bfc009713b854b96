// PeerProcess; see peer.h.
#include "peer.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

extern char** environ;

namespace lockroom::bench {

namespace {

constexpr std::size_t kReadChunk = 64u << 10;

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

void set_nonblocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) throw PeerError(errno_text("fcntl"));
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// The Content-Length value of a header block (lines separated by CRLF), or throws.
std::size_t content_length(std::string_view block) {
  while (!block.empty()) {
    std::size_t eol = block.find("\r\n");
    std::string_view line = block.substr(0, eol);
    block.remove_prefix(eol == std::string_view::npos ? block.size() : eol + 2);
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || !iequals(line.substr(0, colon), "content-length")) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    std::size_t n = 0;
    if (value.empty() || value.size() > 12) throw PeerError("bad Content-Length header: " + std::string(line));
    for (char c : value) {
      if (c < '0' || c > '9') throw PeerError("bad Content-Length header: " + std::string(line));
      n = n * 10 + static_cast<std::size_t>(c - '0');
    }
    return n;
  }
  throw PeerError("a reply header block has no Content-Length");
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "stopped with status " + std::to_string(status);
}

}  // namespace

PeerProcess::PeerProcess(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) : timeout_(timeout) {
  if (argv.empty()) throw PeerError("no server command given");
  int to_child[2], from_child[2];
  if (pipe2(to_child, O_CLOEXEC) < 0) throw PeerError(errno_text("pipe"));
  if (pipe2(from_child, O_CLOEXEC) < 0) {
    close(to_child[0]);
    close(to_child[1]);
    throw PeerError(errno_text("pipe"));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], 0);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int rc = posix_spawnp(&pid_, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(to_child[0]);
  close(from_child[1]);
  to_child_ = to_child[1];
  from_child_ = from_child[0];
  if (rc != 0) {
    pid_ = -1;
    throw PeerError("cannot start " + argv[0] + ": " + std::strerror(rc));
  }
  set_nonblocking(to_child_);
  set_nonblocking(from_child_);
}

PeerProcess::~PeerProcess() {
  if (to_child_ >= 0) close(to_child_);
  if (from_child_ >= 0) close(from_child_);
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

void PeerProcess::queue(std::string_view body) {
  if (out_pos_ == out_.size()) {
    out_.clear();
    out_pos_ = 0;
  }
  out_ += "Content-Length: ";
  out_ += std::to_string(body.size());
  out_ += "\r\n\r\n";
  out_ += body;
}

void PeerProcess::flush() {
  // Write at once; wait (and read meanwhile, so neither side stalls) only when the pipe is full.
  while (has_queued()) {
    ssize_t w = write(to_child_, out_.data() + out_pos_, out_.size() - out_pos_);
    if (w > 0) {
      out_pos_ += static_cast<std::size_t>(w);
      continue;
    }
    if (w < 0 && errno == EPIPE) fail_dead("the server closed its stdin");
    if (w < 0 && errno != EAGAIN && errno != EINTR) throw PeerError(errno_text("writing to the server"));
    if (w < 0 && errno == EAGAIN) pump();
  }
}

std::string_view PeerProcess::take_message() {
  std::string_view rest = std::string_view(in_).substr(in_pos_);
  std::size_t header_end = rest.find("\r\n\r\n");
  if (header_end == std::string_view::npos) return {};
  std::size_t length = content_length(rest.substr(0, header_end));
  std::size_t body_at = header_end + 4;
  if (rest.size() - body_at < length) return {};
  in_pos_ += body_at + length;
  return rest.substr(body_at, length);
}

std::string_view PeerProcess::wait_message() {
  for (;;) {
    if (std::string_view m = take_message(); m.data() != nullptr) return m;
    if (eof_) fail_dead("the server closed its stdout");
    pump();
  }
}

void PeerProcess::pump() {
  pollfd fds[2] = {{from_child_, POLLIN, 0}, {to_child_, static_cast<short>(has_queued() ? POLLOUT : 0), 0}};
  int n;
  do {
    n = poll(fds, has_queued() ? 2 : 1, static_cast<int>(timeout_.count()));
  } while (n < 0 && errno == EINTR);
  if (n < 0) throw PeerError(errno_text("poll"));
  if (n == 0)
    throw PeerError("the server sent nothing for " + std::to_string(timeout_.count()) + " ms (" +
                    std::to_string(out_.size() - out_pos_) + " bytes still queued to it)");
  if (has_queued() && (fds[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
    ssize_t w = write(to_child_, out_.data() + out_pos_, out_.size() - out_pos_);
    if (w < 0 && errno == EPIPE) fail_dead("the server closed its stdin");
    if (w < 0 && errno != EAGAIN && errno != EINTR) throw PeerError(errno_text("writing to the server"));
    if (w > 0) out_pos_ += static_cast<std::size_t>(w);
  }
  if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) read_available();
}

void PeerProcess::read_available() {
  // Drop consumed bytes before growing (views from take_message die here, as documented).
  if (in_pos_ > 0 && (in_pos_ == in_.size() || in_pos_ > (1u << 20))) {
    in_.erase(0, in_pos_);
    in_pos_ = 0;
  }
  for (;;) {
    std::size_t old = in_.size();
    in_.resize(old + kReadChunk);
    ssize_t r = read(from_child_, in_.data() + old, kReadChunk);
    in_.resize(old + (r > 0 ? static_cast<std::size_t>(r) : 0));
    if (r > 0) {
      if (static_cast<std::size_t>(r) < kReadChunk) return;
      continue;
    }
    if (r == 0) {
      eof_ = true;
      return;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return;
    throw PeerError(errno_text("reading from the server"));
  }
}

void PeerProcess::fail_dead(std::string why) {
  int status = 0;
  for (int i = 0; i < 100 && pid_ > 0; ++i) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      why += " and " + describe_status(status) + " (run the command by hand to see its stderr)";
      pid_ = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  throw PeerError(why);
}

int PeerProcess::close_and_wait() {
  close(to_child_);
  to_child_ = -1;
  out_.clear();
  out_pos_ = 0;
  // Drain whatever it still writes until it closes stdout, then reap it; both bounded.
  while (!eof_) pump();
  auto deadline = std::chrono::steady_clock::now() + timeout_;
  int status = 0;
  for (;;) {
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) break;
    if (r < 0 && errno != EINTR) throw PeerError(errno_text("waitpid"));
    if (std::chrono::steady_clock::now() > deadline)
      throw PeerError("the server closed its stdout but did not exit within " + std::to_string(timeout_.count()) + " ms");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  pid_ = -1;
  if (!WIFEXITED(status)) throw PeerError("the server " + describe_status(status));
  return WEXITSTATUS(status);
}

}  // namespace lockroom::bench
