// Starting one process: fork/exec with three pipes, or with a new pseudo-terminal.
//
// The child gets a session of its own (setsid), so its pid is also its process group and a
// signal can reach everything it started; with a pty, the terminal becomes its controlling
// terminal and starts at the requested size. A cgroup (written by the child before exec) and
// RLIMIT_NPROC bound how many processes it may make. Failures before exec (chdir, exec itself)
// travel back through a close-on-exec pipe, so the caller learns them synchronously with the
// stage and errno. Last before the directory change and exec, the child drops to its user (its
// terminal is handed to that user first). The parent's descriptors come back non-blocking and close-on-exec.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "guest/errors.h"
#include "guest/guest_user.h"

namespace lockroom::agent {

struct SpawnRequest {
  std::vector<std::string> argv;
  std::optional<std::string> cwd;
  std::vector<std::string> env;  // NAME=value
  bool pty = false;
  std::uint16_t cols = 80;
  std::uint16_t rows = 24;
  std::optional<std::int64_t> max_processes;  // RLIMIT_NPROC
  int cgroup_procs_fd = -1;                    // cgroup.procs of the child's cgroup, or -1
  GuestUser user = kRootUser;                  // who it runs as (kRootUser: the agent's own user)
};

struct Spawned {
  pid_t pid = -1;
  int stdin_fd = -1;  // pipes: our ends
  int stdout_fd = -1;
  int stderr_fd = -1;
  int master_fd = -1;  // pty: the master side
};

std::variant<Spawned, RpcError> spawn_process(const SpawnRequest& request);

// Finds argv[0] the way a shell would, in the PATH of the child's environment `env`.
std::variant<std::string, RpcError> resolve_program(const std::string& program, const std::vector<std::string>& env);

}  // namespace lockroom::agent
