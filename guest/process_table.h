// ProcessTable: the process.* methods, and every process the host started.
//
// start() opens the streams, places the child under the process limits, spawns it and answers
// with its pid and stream ids; resize() and signal() find it by pid. reap() collects exit
// statuses on SIGCHLD (as PID 1 or a child subreaper it also reaps orphans it never started);
// advance() sends process.exited when each one's output has drained and forgets it once its
// descriptors are closed. abandon_all() ends everything of a session that is gone.
// Loop thread only.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "guest/connection.h"
#include "guest/errors.h"
#include "guest/poll_set.h"
#include "guest/process.h"
#include "guest/process_limits.h"

namespace lockroom::agent {

class ProcessTable {
 public:
  static constexpr std::size_t kMaxProcesses = 1024;  // tracked at once

  ProcessTable(Connection& connection, ProcessLimits& limits, std::vector<std::string> base_env);

  Outcome start(const json& params);
  // Variables ("NAME=value") laid over the base environment of every process started from now
  // on, before the request's own env (which wins): the proxy and CA settings of net.*.
  void set_session_env(std::function<std::vector<std::string>()> fn) { session_env_ = std::move(fn); }
  Outcome resize(const json& params);
  Outcome signal(const json& params);

  void add_polls(PollSet& set);
  void reap();
  void advance();
  // Milliseconds until advance() must run again without I/O, or -1.
  int timeout_ms() const;
  void abandon_all();
  std::size_t running() const;

 private:
  Process* find(std::int64_t pid);
  std::vector<std::string> environment(const protocol::channel::ProcessStartParams& params) const;

  Connection& connection_;
  ProcessLimits& limits_;
  std::vector<std::string> base_env_;
  std::function<std::vector<std::string>()> session_env_;
  std::map<pid_t, std::unique_ptr<Process>> processes_;
};

}  // namespace lockroom::agent
