// The server as a child process; see child.h.
#include "child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace transcript {

namespace {

constexpr auto kExitCheck = std::chrono::milliseconds(20);  // how often a silent child is checked

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

void make_pipe(int fds[2]) {
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
}

// Appends what `fd` has to `out`; closes it at end of file or on error.
void drain(int& fd, std::string& out) {
  char buf[65536];
  while (fd >= 0) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<std::size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN) {
      return;
    } else {
      close_fd(fd);
    }
  }
}

}  // namespace

Child::Child(const std::vector<std::string>& argv) {
  int in[2], out[2], err[2], exec_error[2];
  make_pipe(in);
  make_pipe(out);
  make_pipe(err);
  make_pipe(exec_error);
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid_ == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    ::execv(args[0], args.data());
    int e = errno;
    (void)!::write(exec_error[1], &e, sizeof e);
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  ::close(exec_error[1]);
  int e = 0;
  ssize_t n;
  do n = ::read(exec_error[0], &e, sizeof e); while (n < 0 && errno == EINTR);
  ::close(exec_error[0]);
  in_fd_ = in[1];
  out_fd_ = out[0];
  err_fd_ = err[0];
  for (int fd : {in_fd_, out_fd_, err_fd_}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  if (n == sizeof e) {
    reap();
    throw std::runtime_error("cannot run " + argv[0] + ": " + std::strerror(e));
  }
}

Child::~Child() {
  close_fd(in_fd_);
  close_fd(out_fd_);
  close_fd(err_fd_);
  if (pid_ > 0 && !exited_) {
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
    }
  }
}

void Child::reap() {
  if (exited_ || pid_ <= 0) return;
  if (::waitpid(pid_, &status_, WNOHANG) == pid_) exited_ = true;
}

void Child::poll_once(Clock::time_point deadline, bool want_write, bool& can_write) {
  pollfd fds[3];
  nfds_t count = 0;
  for (int fd : {out_fd_, err_fd_})
    if (fd >= 0) fds[count++] = pollfd{fd, POLLIN, 0};
  if (want_write && in_fd_ >= 0) fds[count++] = pollfd{in_fd_, POLLOUT, 0};
  auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  wait = std::clamp(wait, std::chrono::milliseconds(0), std::chrono::milliseconds(kExitCheck));
  int rc = ::poll(fds, count, static_cast<int>(wait.count()));
  can_write = false;
  if (rc < 0) return;  // EINTR: the caller loops
  for (nfds_t i = 0; i < count; ++i) {
    if (fds[i].fd == in_fd_) {
      can_write = fds[i].revents != 0;  // POLLERR too: the write then reports the broken pipe
    } else if (fds[i].revents != 0) {
      if (fds[i].fd == out_fd_) drain(out_fd_, out_text_);
      else drain(err_fd_, err_text_);
    }
  }
  reap();
}

std::string Child::write(std::string_view bytes, Clock::time_point deadline) {
  if (in_fd_ < 0) return "the runner already closed the server's stdin";
  while (!bytes.empty()) {
    ssize_t n = ::write(in_fd_, bytes.data(), bytes.size());
    if (n > 0) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) return std::string("writing to the server's stdin failed: ") + std::strerror(errno);
    if (Clock::now() >= deadline) return "the server did not read its stdin for 10 s";
    bool can_write = false;
    poll_once(deadline, true, can_write);
  }
  return {};
}

void Child::close_stdin() { close_fd(in_fd_); }

bool Child::pump(Clock::time_point deadline, const std::function<bool()>& done) {
  // Take what is already readable first, so `done` sees it even with a deadline in the past.
  drain(out_fd_, out_text_);
  drain(err_fd_, err_text_);
  reap();
  while (!done()) {
    if (Clock::now() >= deadline || (exited_ && out_fd_ < 0 && err_fd_ < 0)) return done();
    bool can_write = false;
    poll_once(deadline, false, can_write);
  }
  return true;
}

bool Child::wait_exit(Clock::time_point deadline) {
  return pump(deadline, [this] { return exited_ && out_fd_ < 0 && err_fd_ < 0; });
}

std::string Child::take_stdout() { return std::exchange(out_text_, std::string()); }

int Child::exit_code() const { return exited_ && WIFEXITED(status_) ? WEXITSTATUS(status_) : -1; }

std::string Child::describe_status() const {
  if (!exited_) return "still running";
  if (WIFEXITED(status_)) return "exit code " + std::to_string(WEXITSTATUS(status_));
  if (WIFSIGNALED(status_)) return "killed by signal " + std::to_string(WTERMSIG(status_)) + " (" + strsignal(WTERMSIG(status_)) + ")";
  return "wait status " + std::to_string(status_);
}

}  // namespace transcript
