// Runs a piece of code in a forked child with a time and memory bound, so a test can show that
// code under test hangs or runs away without hanging or exhausting the test runner itself.
#pragma once

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

namespace lockroom::testing {

enum class ChildOutcome { kPassed, kFailed, kHung, kCrashed };

inline const char* outcome_name(ChildOutcome outcome) {
  switch (outcome) {
    case ChildOutcome::kPassed: return "passed";
    case ChildOutcome::kFailed: return "failed its checks";
    case ChildOutcome::kHung: return "did not finish in time (hang)";
    case ChildOutcome::kCrashed: return "crashed (or ran out of its memory bound)";
  }
  return "?";
}

// `body` returns true when its checks pass. It runs in a child limited to `memory_bytes` of
// address space and killed after `limit`.
inline ChildOutcome run_bounded(const std::function<bool()>& body, std::chrono::milliseconds limit,
                                rlim_t memory_bytes = rlim_t(1) << 30) {
  pid_t pid = fork();
  if (pid < 0) return ChildOutcome::kCrashed;
  if (pid == 0) {
    rlimit mem{memory_bytes, memory_bytes};
    setrlimit(RLIMIT_AS, &mem);
    bool ok = false;
    try {
      ok = body();
    } catch (...) {
      _exit(3);
    }
    _exit(ok ? 0 : 1);
  }
  auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (true) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return ChildOutcome::kHung;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status)) {
    if (WEXITSTATUS(status) == 0) return ChildOutcome::kPassed;
    if (WEXITSTATUS(status) == 1) return ChildOutcome::kFailed;
  }
  return ChildOutcome::kCrashed;
}

}  // namespace lockroom::testing
