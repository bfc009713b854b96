// Running the guest's `git` for the workspace methods: one command at a time, to completion.
//
// run_git() spawns git (found on PATH, then /usr/bin/git) in a directory with stdin from a file,
// from bytes in memory (fed through a pipe while git runs) or /dev/null, collects stdout and
// stderr up to a bound each, and kills it after a deadline.
// Every run gets the same environment on top of the agent's: LC_ALL=C (messages are parsed),
// no pager, no prompts, no optional locks (a manifest never takes the index lock an agent's own
// git may want), and `-c safe.directory=*` (the workspace may be owned by another user).
// Blocking: the agent's loop waits while git runs; callers keep the work bounded.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "server/common/result.h"

namespace lockroom::agent {

struct GitRun {
  int exit_code = -1;   // -1 when killed by a signal (or the deadline)
  std::string out;
  std::string err;
  bool out_truncated = false;
  bool timed_out = false;

  bool ok() const { return exit_code == 0; }
  // git's first "error:"/"fatal:" lines (else the last line of stderr, else how git ended): for
  // error messages.
  std::string problem() const;
};

struct GitOptions {
  std::string stdin_path;  // empty: stdin_data, else /dev/null
  std::optional<std::string> stdin_data;
  std::size_t max_out = 1u << 20;
  std::chrono::milliseconds deadline{120000};
};

// `args` follow "git"; the run happens in `dir`. Fails only when git cannot be started at all.
Result<GitRun> run_git(const std::string& dir, const std::vector<std::string>& args, const GitOptions& options = {});

// Where git was found ("git" itself when it is nowhere: the spawn then fails with a clear error).
const std::string& git_program();

}  // namespace lockroom::agent
