// Secret values from the environment, files and commands; see secret_source.h.
#include "server/egress/policy/secret_source.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace lockroom::egress {

namespace {

std::string trim(std::string text) {
  const char* space = " \t\r\n\f\v";
  std::size_t end = text.find_last_not_of(space);
  if (end == std::string::npos) return "";
  text.erase(end + 1);
  text.erase(0, text.find_first_not_of(space));
  return text;
}

Result<std::string> checked(const Secret& secret, const std::string& source, std::string raw) {
  std::string value = trim(std::move(raw));
  if (value.empty()) return make_error(ErrorCode::kUnavailable, "secret " + secret.name + ": " + source + " is empty");
  if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
    return make_error(ErrorCode::kInvalidInput, "secret " + secret.name + ": " + source +
                                                    " has several lines or a NUL byte; a secret value must be one line");
  }
  return value;
}

Result<std::string> from_env(const Secret& secret) {
  const char* value = nullptr;
  std::string source = "environment variable " + secret.from.env;
  if (const auto& editor_env = secret.from.environment) {
    source += " of the editor";
    auto it = editor_env->find(secret.from.env);
    if (it != editor_env->end()) value = it->second.c_str();
  } else {
    value = std::getenv(secret.from.env.c_str());
  }
  if (value == nullptr) return make_error(ErrorCode::kUnavailable, "secret " + secret.name + ": " + source + " is not set");
  if (std::strlen(value) > kMaxSecretValueBytes) {
    return make_error(ErrorCode::kLimitExceeded, "secret " + secret.name + ": " + source + " is longer than 64 KiB");
  }
  return checked(secret, source, value);
}

Result<std::string> from_file(const Secret& secret) {
  std::string source = "file " + secret.from.file;
  int fd = open(secret.from.file.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    return make_error(ErrorCode::kUnavailable, "secret " + secret.name + ": cannot open " + source + ": " + std::strerror(errno));
  }
  std::string content;
  char buffer[4096];
  while (content.size() <= kMaxSecretValueBytes) {
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int error = errno;
      close(fd);
      return make_error(ErrorCode::kUnavailable, "secret " + secret.name + ": cannot read " + source + ": " + std::strerror(error));
    }
    if (n == 0) break;
    content.append(buffer, static_cast<std::size_t>(n));
  }
  close(fd);
  if (content.size() > kMaxSecretValueBytes) {
    return make_error(ErrorCode::kLimitExceeded, "secret " + secret.name + ": " + source + " is larger than 64 KiB");
  }
  return checked(secret, source, std::move(content));
}

Result<std::string> from_command(const Secret& secret) {
  std::string source = "command " + secret.from.command.front();
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return make_error(ErrorCode::kInternal, "secret " + secret.name + ": pipe: " + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  std::vector<std::string> args = secret.from.command;
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  int spawned = posix_spawnp(&pid, argv[0], &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  close(pipe_fds[1]);
  if (spawned != 0) {
    close(pipe_fds[0]);
    return make_error(ErrorCode::kUnavailable, "secret " + secret.name + ": cannot run " + source + ": " + std::strerror(spawned));
  }

  std::string output;
  std::string problem;
  auto deadline = std::chrono::steady_clock::now() + secret.from.timeout;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      problem = source + " did not finish within " + std::to_string(secret.from.timeout.count()) + " ms";
      break;
    }
    pollfd p{pipe_fds[0], POLLIN, 0};
    int ready = poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // the deadline check above ends it
    char buffer[4096];
    ssize_t n = read(pipe_fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // end of output
    output.append(buffer, static_cast<std::size_t>(n));
    if (output.size() > kMaxSecretValueBytes) {
      problem = source + " printed more than 64 KiB";
      break;
    }
  }
  close(pipe_fds[0]);
  if (!problem.empty()) kill(-pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!problem.empty()) return make_error(ErrorCode::kUnavailable, "secret " + secret.name + ": " + problem);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string how = WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status)) : "signal " + std::to_string(WTERMSIG(status));
    return make_error(ErrorCode::kUnavailable, "secret " + secret.name + ": " + source + " failed (" + how + ")");
  }
  return checked(secret, "the output of " + source, std::move(output));
}

}  // namespace

Result<std::string> resolve_secret_value(const Secret& secret) {
  switch (secret.from.kind) {
    case SecretSource::Kind::kEnv: return from_env(secret);
    case SecretSource::Kind::kFile: return from_file(secret);
    case SecretSource::Kind::kCommand: return from_command(secret);
  }
  return make_error(ErrorCode::kInternal, "secret " + secret.name + ": unknown source");
}

Result<SecretValues> resolve_secret_values(const std::vector<Secret>& secrets) {
  SecretValues values;
  for (const Secret& secret : secrets) {
    Result<std::string> value = resolve_secret_value(secret);
    if (!value) return value.error();
    values[secret.name] = std::move(*value);
  }
  return values;
}

}  // namespace lockroom::egress
