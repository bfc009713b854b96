// run_git; see workspace_git.h.
#include "guest/workspace_git.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "guest/guest_user.h"

extern char** environ;

namespace lockroom::agent {

namespace {

constexpr std::size_t kMaxErr = 64u << 10;

bool executable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

std::string find_git() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':'))
    if (!dir.empty() && executable(dir + "/git")) return dir + "/git";
  for (const char* known : {"/usr/bin/git", "/usr/local/bin/git", "/bin/git"})
    if (executable(known)) return known;
  return "git";
}

std::vector<std::string> git_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string entry = *e;
    if (entry.rfind("GIT_", 0) == 0 || entry.rfind("LC_ALL=", 0) == 0) continue;  // nothing of a caller's git setup leaks in
    env.push_back(std::move(entry));
  }
  if (user_switching()) {  // git runs as the workspace's owner: its HOME, not root's
    std::erase_if(env, [](const std::string& e) { return e.rfind("HOME=", 0) == 0; });
    env.push_back(std::string("HOME=") + default_user().home);
  }
  for (const char* extra : {"LC_ALL=C", "GIT_PAGER=cat", "PAGER=cat", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0",
                            "GIT_ADVICE=0"})
    env.push_back(extra);
  return env;
}

struct Fds {
  int fd[2] = {-1, -1};
  ~Fds() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
};

}  // namespace

const std::string& git_program() {
  static const std::string program = find_git();
  return program;
}

std::string GitRun::problem() const {
  // git's own "error:"/"fatal:" lines say what went wrong; hints and advice follow them.
  std::istringstream lines(err);
  std::string line, found, last;
  int kept = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    last = line;
    if (kept < 3 && (line.rfind("error: ", 0) == 0 || line.rfind("fatal: ", 0) == 0)) {
      found += (kept++ ? "; " : "") + line;
    }
  }
  std::string text = found.empty() ? last : found;
  if (!text.empty()) return text.size() > 400 ? text.substr(0, 400) + "..." : text;
  if (timed_out) return "git took too long and was stopped";
  if (exit_code < 0) return "git was killed";
  return "git exited with status " + std::to_string(exit_code);
}

Result<GitRun> run_git(const std::string& dir, const std::vector<std::string>& args, const GitOptions& options) {
  Fds out, err, in;
  const bool feed = options.stdin_path.empty() && options.stdin_data;
  if (::pipe2(out.fd, O_CLOEXEC) != 0 || ::pipe2(err.fd, O_CLOEXEC) != 0 || (feed && ::pipe2(in.fd, O_CLOEXEC) != 0))
    return make_error(ErrorCode::kUnavailable, std::string("cannot make pipes for git: ") + std::strerror(errno));
  std::string input = options.stdin_path.empty() ? "/dev/null" : options.stdin_path;

  std::vector<std::string> argv_text = {"git", "-c", "safe.directory=*", "-c", "core.quotePath=false"};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_text = git_environment();
  std::vector<char*> envp;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);

  // A fork rather than posix_spawn: the child drops to the workspace's owner before it runs git,
  // which reads the workspace's own .git/config (a guest program may have put hooks or an
  // fsmonitor command there). Everything it needs is made before the fork.
  const std::string& program = git_program();
  const GuestUser& user = default_user();
  int input_fd = -1;
  if (!feed && (input_fd = ::open(input.c_str(), O_RDONLY | O_CLOEXEC)) < 0)
    return make_error(ErrorCode::kUnavailable, "cannot open " + input + " for git: " + std::strerror(errno));
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) {
    if (input_fd >= 0) ::close(input_fd);
    return make_error(ErrorCode::kUnavailable, std::string("cannot make pipes for git: ") + std::strerror(errno));
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    ::signal(SIGCHLD, SIG_DFL);
    int step = 0;
    if (::dup2(feed ? in.fd[0] : input_fd, 0) < 0 || ::dup2(out.fd[1], 1) < 0 || ::dup2(err.fd[1], 2) < 0) step = 1;
    else if (!become_user(user)) step = 2;
    else if (::chdir(dir.c_str()) != 0) step = 3;
    else ::execve(program.c_str(), argv.data(), envp.data());
    int failure[2] = {step ? step : 4, errno};
    ssize_t ignored = ::write(report[1], failure, sizeof failure);
    (void)ignored;
    _exit(127);
  }
  int fork_errno = errno;
  if (input_fd >= 0) ::close(input_fd);
  ::close(report[1]);
  if (pid < 0) {
    ::close(report[0]);
    return make_error(ErrorCode::kUnavailable, std::string("cannot start git: fork failed: ") + std::strerror(fork_errno));
  }
  int failure[2] = {0, 0};
  ssize_t got;
  do {
    got = ::read(report[0], failure, sizeof failure);
  } while (got < 0 && errno == EINTR);
  ::close(report[0]);
  if (got == static_cast<ssize_t>(sizeof failure)) {
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    if (failure[0] == 4)
      return make_error(ErrorCode::kUnavailable, "cannot run " + program + " in " + dir + ": " + std::strerror(failure[1]) +
                                                     " (the guest image must carry git)");
    std::string what = failure[0] == 1 ? "setting up its descriptors" : failure[0] == 2 ? "switching to the workspace's user" : "changing to " + dir;
    return make_error(ErrorCode::kUnavailable, "cannot run git in " + dir + ": " + what + " failed: " + std::strerror(failure[1]));
  }
  ::close(out.fd[1]);
  ::close(err.fd[1]);
  out.fd[1] = err.fd[1] = -1;
  // The input goes in as git takes it, between reads of its output (neither side can block).
  std::string_view to_feed;
  if (feed) {
    ::close(in.fd[0]);
    in.fd[0] = -1;
    ::fcntl(in.fd[1], F_SETFL, O_NONBLOCK);
    to_feed = *options.stdin_data;
    if (to_feed.empty()) {
      ::close(in.fd[1]);
      in.fd[1] = -1;
    }
  }

  GitRun run;
  auto deadline = std::chrono::steady_clock::now() + options.deadline;
  bool out_open = true, err_open = true;
  char buf[64u << 10];
  while (out_open || err_open) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      run.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd fds[3] = {{out_open ? out.fd[0] : -1, POLLIN, 0}, {err_open ? err.fd[0] : -1, POLLIN, 0}, {in.fd[1], POLLOUT, 0}};
    int n = ::poll(fds, 3, static_cast<int>(std::min<long long>(left, 1000)));
    if (n < 0 && errno != EINTR) break;
    if (n > 0 && fds[2].revents) {
      ssize_t put = (fds[2].revents & POLLOUT) ? ::write(in.fd[1], to_feed.data(), to_feed.size()) : -1;
      if (put > 0) to_feed.remove_prefix(static_cast<std::size_t>(put));
      if (to_feed.empty() || (put < 0 && errno != EAGAIN && errno != EINTR)) {  // all in, or git stopped reading
        ::close(in.fd[1]);
        in.fd[1] = -1;
      }
    }
    for (int i = 0; n > 0 && i < 2; ++i) {
      if (!fds[i].revents) continue;
      ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        (i == 0 ? out_open : err_open) = false;
        continue;
      }
      std::string& sink = i == 0 ? run.out : run.err;
      std::size_t limit = i == 0 ? options.max_out : kMaxErr;
      std::size_t keep = std::min(static_cast<std::size_t>(got), limit - std::min(limit, sink.size()));
      sink.append(buf, keep);
      if (i == 0 && keep < static_cast<std::size_t>(got)) {
        run.out_truncated = true;  // more than the caller can use: stop git rather than read on
        ::kill(pid, SIGKILL);
      }
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

}  // namespace lockroom::agent
