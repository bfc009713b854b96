// One started process and its streams; see process.h.
#include "guest/process.h"

#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "guest/log.h"

namespace lockroom::agent {

namespace channel = protocol::channel;
namespace agent_error = channel::agent_error;

namespace {
constexpr std::size_t kReadChunk = 64u << 10;

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

std::size_t readable_bytes(int fd) {
  int n = 0;
  if (::ioctl(fd, FIONREAD, &n) != 0) return 0;
  return n > 0 ? static_cast<std::size_t>(n) : 0;
}
}  // namespace

Process::Process(Connection& connection, bool pty) : connection_(connection), pty_(pty) {}

Process::~Process() {
  for (std::uint32_t s : {stdout_.stream, stderr_.stream, terminal_.stream, stdin_stream_})
    if (s) connection_.release(s);
  close_fd(stdout_.fd);
  close_fd(stderr_.fd);
  close_fd(terminal_.fd);
  close_fd(stdin_fd_);
}

Result<channel::ProcessStreams> Process::open_streams() {
  channel::ProcessStreams streams;
  auto open = [this](std::uint32_t& id) -> Result<void> {
    auto opened = connection_.open_stream(this);
    if (!opened) return opened.error();
    id = *opened;
    return {};
  };
  Result<void> r;
  if (pty_) {
    r = open(terminal_.stream);
    streams.pty_stream = terminal_.stream;
  } else {
    if ((r = open(stdin_stream_)) && (r = open(stdout_.stream))) r = open(stderr_.stream);
    streams.stdin_stream = stdin_stream_;
    streams.stdout_stream = stdout_.stream;
    streams.stderr_stream = stderr_.stream;
  }
  if (!r) {
    refuse(r.error().message);
    return r.error();
  }
  stdout_.stream_open = stderr_.stream_open = terminal_.stream_open = true;
  stdin_open_ = true;
  return streams;
}

void Process::refuse(const std::string& why) {
  for (std::uint32_t* s : {&stdout_.stream, &stderr_.stream, &terminal_.stream, &stdin_stream_}) {
    if (*s) connection_.reset_stream(*s, channel::reset_code::kRefused, why);
    *s = 0;
  }
  stdin_open_ = false;
}

void Process::attach(const Spawned& spawned, std::string cgroup) {
  pid_ = spawned.pid;
  cgroup_ = std::move(cgroup);
  stdin_fd_ = spawned.stdin_fd;
  stdout_.fd = spawned.stdout_fd;
  stderr_.fd = spawned.stderr_fd;
  terminal_.fd = spawned.master_fd;
  // The agent never sends on stdin: its own direction closes at once.
  if (!pty_) connection_.close_stream(stdin_stream_);
}

void Process::add_polls(PollSet& set) {
  bool room = !connection_.backlogged();
  auto want_output = [&](Output& out) -> short {
    if (out.fd < 0) return 0;
    if (!out.stream_open) return POLLIN;  // drain and drop, so the process never blocks on it
    return room && connection_.credit(out.stream) > 0 ? POLLIN : 0;
  };
  if (short ev = want_output(stdout_)) set.add(stdout_.fd, ev, [this](short) { read_output(stdout_); });
  if (short ev = want_output(stderr_)) set.add(stderr_.fd, ev, [this](short) { read_output(stderr_); });
  if (pty_) {
    short ev = want_output(terminal_);
    if (terminal_.fd >= 0 && !input_.empty()) ev |= POLLOUT;
    if (ev) {
      set.add(terminal_.fd, ev, [this](short revents) {
        if (revents & POLLOUT) write_input();
        if (revents & (POLLIN | POLLHUP | POLLERR)) read_output(terminal_);
      });
    }
  } else if (stdin_fd_ >= 0 && !input_.empty()) {
    set.add(stdin_fd_, POLLOUT, [this](short) { write_input(); });
  }
}

void Process::read_output(Output& out) {
  if (out.fd < 0) return;
  std::size_t want = kReadChunk;
  if (out.stream_open) want = std::min(want, connection_.credit(out.stream));
  if (want == 0) return;
  char buf[kReadChunk];
  ssize_t n = ::read(out.fd, buf, want);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) {
    // EOF; on a pty, EIO once every holder of the terminal has closed it.
    if (n < 0 && errno != EIO) log_warn("reading output of process " + std::to_string(pid_) + " failed: " + std::strerror(errno));
    return finish_output(out);
  }
  if (out.stream_open) connection_.send(out.stream, std::string_view(buf, static_cast<std::size_t>(n)));
}

void Process::finish_output(Output& out) {
  close_fd(out.fd);
  if (out.stream_open) connection_.close_stream(out.stream);
  if (&out == &terminal_) {
    input_.clear();
    stdin_open_ = false;
  }
}

void Process::write_input() {
  int fd = input_fd();
  while (fd >= 0 && !input_.empty()) {
    ssize_t n = ::write(fd, input_.data(), input_.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n < 0) return end_input(channel::reset_code::kIoError, std::string("the process no longer reads its input: ") + std::strerror(errno));
    input_.erase(0, static_cast<std::size_t>(n));
    connection_.consumed(pty_ ? terminal_.stream : stdin_stream_, static_cast<std::size_t>(n));
  }
  if (input_.empty() && stdin_closing_ && !pty_) close_fd(stdin_fd_);
}

void Process::end_input(std::uint32_t code, const std::string& why) {
  input_.clear();
  if (pty_) return;  // the terminal's output side carries on
  close_fd(stdin_fd_);
  if (stdin_open_) connection_.reset_stream(stdin_stream_, code, why);
  stdin_open_ = false;
}

void Process::on_stream_data(std::uint32_t stream, std::string_view bytes) {
  if (stream != stdin_stream_ && stream != terminal_.stream) return connection_.consumed(stream, bytes.size());
  if (input_fd() < 0 || !stdin_open_) return connection_.consumed(stream, bytes.size());
  input_.append(bytes);  // at most one window: the session enforces the credit
  write_input();
}

void Process::on_stream_closed(std::uint32_t stream) {
  if (stream == stdin_stream_ && !pty_) {
    stdin_closing_ = true;
    stdin_open_ = false;
    if (input_.empty()) close_fd(stdin_fd_);
  }
  // stdout/stderr: the host never sends on them; its half-close is expected. On a pty the
  // terminal stays open (send "\x04" for end of input).
}

void Process::on_stream_reset(std::uint32_t stream, std::uint32_t, std::string_view) {
  if (stream == stdin_stream_) {
    stdin_open_ = false;
    input_.clear();
    close_fd(stdin_fd_);
  }
  if (stream == stdout_.stream) stdout_.stream_open = false;
  if (stream == stderr_.stream) stderr_.stream_open = false;
  if (stream == terminal_.stream) {
    terminal_.stream_open = false;
    stdin_open_ = false;
    input_.clear();
  }
}

void Process::on_reaped(int status) {
  reaped_ = true;
  status_ = status;
  reaped_at_ = Clock::now();
}

bool Process::drained(const Output& out, Clock::time_point now) const {
  if (out.fd < 0 || !out.stream_open) return true;
  if (readable_bytes(out.fd) > 0) return false;
  return !pty_ || now - reaped_at_ >= kPtyGrace;
}

std::optional<Process::Clock::time_point> Process::deadline() const {
  if (!reaped_ || exit_sent_ || abandoned_ || !pty_ || terminal_.fd < 0) return std::nullopt;
  return reaped_at_ + kPtyGrace;
}

bool Process::advance(Clock::time_point now) {
  if (!reaped_) return false;
  if (!exit_sent_ && !abandoned_) {
    bool done = pty_ ? drained(terminal_, now) : drained(stdout_, now) && drained(stderr_, now);
    if (!done) return false;
    channel::ProcessExited exited;
    exited.pid = pid_;
    if (WIFEXITED(status_)) {
      exited.exit_code = WEXITSTATUS(status_);
    } else if (WIFSIGNALED(status_)) {
      exited.signal = WTERMSIG(status_);
      exited.core_dumped = WCOREDUMP(status_);
    }
    connection_.send_message(protocol::encode_notification(channel::method::kProcessExited, channel::to_json(exited)));
    exit_sent_ = true;
    if (!pty_ && stdin_open_) end_input(channel::reset_code::kProcessExited, "the process has exited");
    if (!pty_) close_fd(stdin_fd_);
  }
  return stdout_.fd < 0 && stderr_.fd < 0 && terminal_.fd < 0;
}

void Process::abandon() {
  abandoned_ = true;
  if (!reaped_ && pid_ > 0) ::kill(-pid_, SIGKILL);
  stdout_.stream = stderr_.stream = terminal_.stream = stdin_stream_ = 0;  // the session forgot them
  stdout_.stream_open = stderr_.stream_open = terminal_.stream_open = stdin_open_ = false;
  close_fd(stdout_.fd);
  close_fd(stderr_.fd);
  close_fd(terminal_.fd);
  close_fd(stdin_fd_);
  input_.clear();
}

Outcome Process::resize(std::int64_t cols, std::int64_t rows) {
  if (!pty_) return make_rpc_error(agent_error::kNotATerminal, "process " + std::to_string(pid_) + " has no terminal to resize (start it with pty)");
  if (terminal_.fd < 0) return make_rpc_error(agent_error::kProcessGone, "the terminal of process " + std::to_string(pid_) + " is closed");
  winsize size{static_cast<unsigned short>(rows), static_cast<unsigned short>(cols), 0, 0};
  if (::ioctl(terminal_.fd, TIOCSWINSZ, &size) != 0) return errno_error(errno, "process.resize");
  return json::object();
}

Outcome Process::signal(int sig, bool group) {
  if (reaped_) return make_rpc_error(agent_error::kProcessGone, "process " + std::to_string(pid_) + " has already exited");
  if (::kill(group ? -pid_ : pid_, sig) != 0) return errno_error(errno, "process.signal to " + std::to_string(pid_));
  return json::object();
}

}  // namespace lockroom::agent
