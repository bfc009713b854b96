// fork/exec with pipes or a pty; see spawn.h.
#include "guest/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "protocol/channel/messages.h"

namespace lockroom::agent {

namespace agent_error = protocol::channel::agent_error;

namespace {

constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

enum Stage : int { kSetsid = 1, kTerminal, kDup, kCgroup, kRlimit, kUser, kChdir, kExec };
const char* stage_name(int stage) {
  switch (stage) {
    case kSetsid: return "setsid";
    case kTerminal: return "terminal";
    case kDup: return "dup";
    case kCgroup: return "cgroup";
    case kRlimit: return "rlimit";
    case kUser: return "user";
    case kChdir: return "chdir";
    default: return "exec";
  }
}

RpcError spawn_error(const std::string& program, const std::string& what, int err, const char* stage) {
  const char* name = strerrorname_np(err);
  return make_rpc_error(agent_error::kSpawnFailed, "cannot start \"" + program + "\": " + what + ": " + std::strerror(err),
                        json{{"stage", stage}, {"errno", name ? name : std::to_string(err)}});
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Async-signal-safe failure report from the child.
[[noreturn]] void child_fail(int pipe_fd, int stage) {
  int report[2] = {stage, errno};
  ssize_t ignored = ::write(pipe_fd, report, sizeof report);
  (void)ignored;
  _exit(127);
}

bool set_nonblocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

}  // namespace

std::variant<std::string, RpcError> resolve_program(const std::string& program, const std::vector<std::string>& env) {
  if (program.find('/') != std::string::npos) return program;
  std::string path = kDefaultPath;
  for (const auto& entry : env)
    if (entry.rfind("PATH=", 0) == 0) path = entry.substr(5);
  int last_error = ENOENT;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    start = end + 1;
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + program;
    struct stat st{};
    if (::stat(candidate.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    last_error = errno;
  }
  return spawn_error(program, "not found as an executable in PATH=" + path, last_error, "exec");
}

std::variant<Spawned, RpcError> spawn_process(const SpawnRequest& request) {
  const std::string& program = request.argv.at(0);
  auto resolved = resolve_program(program, request.env);
  if (auto* error = std::get_if<RpcError>(&resolved)) return *error;
  const std::string& path = std::get<std::string>(resolved);

  // Everything the child needs is built before fork: after it, only async-signal-safe calls.
  std::vector<char*> argv;
  for (const auto& a : request.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : request.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  Spawned out;
  int child_in = -1, child_out = -1, child_err = -1;
  char slave_name[128] = {0};
  auto cleanup = [&] {
    close_fd(out.stdin_fd), close_fd(out.stdout_fd), close_fd(out.stderr_fd), close_fd(out.master_fd);
    close_fd(child_in), close_fd(child_out), close_fd(child_err);
  };

  if (request.pty) {
    out.master_fd = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (out.master_fd < 0) return spawn_error(program, "cannot open a pseudo-terminal (is devpts mounted on /dev/pts?)", errno, "terminal");
    winsize size{request.rows, request.cols, 0, 0};
    if (::grantpt(out.master_fd) != 0 || ::unlockpt(out.master_fd) != 0 ||
        ::ptsname_r(out.master_fd, slave_name, sizeof slave_name) != 0 || ::ioctl(out.master_fd, TIOCSWINSZ, &size) != 0) {
      int err = errno;
      cleanup();
      return spawn_error(program, "cannot set up the pseudo-terminal", err, "terminal");
    }
  } else {
    int in[2], o[2], e[2];
    if (::pipe2(in, O_CLOEXEC) != 0) return spawn_error(program, "cannot create pipes", errno, "dup");
    out.stdin_fd = in[1], child_in = in[0];
    if (::pipe2(o, O_CLOEXEC) != 0) { int err = errno; cleanup(); return spawn_error(program, "cannot create pipes", err, "dup"); }
    out.stdout_fd = o[0], child_out = o[1];
    if (::pipe2(e, O_CLOEXEC) != 0) { int err = errno; cleanup(); return spawn_error(program, "cannot create pipes", err, "dup"); }
    out.stderr_fd = e[0], child_err = e[1];
  }

  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) {
    int err = errno;
    cleanup();
    return spawn_error(program, "cannot create the report pipe", err, "exec");
  }

  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    cleanup();
    close_fd(report[0]), close_fd(report[1]);
    return spawn_error(program, "fork failed", err, "fork");
  }
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGPIPE, SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT}) signal(sig, SIG_DFL);
    if (::setsid() < 0) child_fail(report[1], kSetsid);
    if (request.pty) {
      int slave = ::open(slave_name, O_RDWR);
      if (slave < 0 || ::ioctl(slave, TIOCSCTTY, 0) != 0) child_fail(report[1], kTerminal);
      if (request.user.uid != 0 && user_switching() && ::fchown(slave, request.user.uid, request.user.gid) != 0) child_fail(report[1], kTerminal);
      child_in = child_out = child_err = slave;
    }
    if (::dup2(child_in, 0) < 0 || ::dup2(child_out, 1) < 0 || ::dup2(child_err, 2) < 0) child_fail(report[1], kDup);
    if (request.cgroup_procs_fd >= 0 && ::write(request.cgroup_procs_fd, "0", 1) != 1) child_fail(report[1], kCgroup);
    if (request.max_processes) {
      rlimit limit{static_cast<rlim_t>(*request.max_processes), static_cast<rlim_t>(*request.max_processes)};
      if (::setrlimit(RLIMIT_NPROC, &limit) != 0) child_fail(report[1], kRlimit);
    }
    if (!become_user(request.user)) child_fail(report[1], kUser);
    if (request.cwd && ::chdir(request.cwd->c_str()) != 0) child_fail(report[1], kChdir);
    ::execve(path.c_str(), argv.data(), envp.data());
    child_fail(report[1], kExec);
  }

  close_fd(report[1]);
  close_fd(child_in), close_fd(child_out), close_fd(child_err);
  int failure[2] = {0, 0};
  ssize_t n;
  do {
    n = ::read(report[0], failure, sizeof failure);
  } while (n < 0 && errno == EINTR);
  close_fd(report[0]);
  if (n == static_cast<ssize_t>(sizeof failure)) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    cleanup();
    std::string what = failure[0] == kChdir ? "cannot change to the directory \"" + request.cwd.value_or("") + "\""
                       : failure[0] == kExec ? "exec of " + path + " failed"
                                             : std::string("setting up the child failed at ") + stage_name(failure[0]);
    return spawn_error(program, what, failure[1], stage_name(failure[0]));
  }
  out.pid = pid;
  for (int fd : {out.stdin_fd, out.stdout_fd, out.stderr_fd, out.master_fd})
    if (fd >= 0) set_nonblocking(fd);
  return out;
}

}  // namespace lockroom::agent
