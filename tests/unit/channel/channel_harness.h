// Test harness for the channel: a libuv loop that tests can run until a condition holds, the
// real lockroom-agent spawned as a host process on one end of a socketpair, and a GuestChannel
// plus AgentClient on the other end. Teardown closes everything and checks that the loop closes
// cleanly (uv_loop_close() == 0), the way libuv's own tests end.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <initializer_list>
#include <string>
#include <vector>

#include <uv.h>

#include "server/channel/agent_client.h"
#include "server/channel/guest_channel.h"

namespace lockroom::testing {

using namespace std::chrono_literals;

class Loop {
 public:
  Loop();
  ~Loop();
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  uv_loop_t* get() { return &loop_; }
  // Runs the loop until `done()` holds or `limit` passes; false on timeout.
  bool run_until(const std::function<bool()>& done, std::chrono::milliseconds limit = 20s);
  // Lets every pending close run and closes the loop; 0 when nothing leaked.
  int finish();

 private:
  uv_loop_t loop_;
  uv_timer_t tick_;
  bool finished_ = false;
};

// The real agent binary, running on the host with --fd 3.
class AgentProcess {
 public:
  // Returns the host's end of the socketpair; the agent has the other one.
  explicit AgentProcess(const std::vector<std::string>& extra_args = {});
  ~AgentProcess();
  int take_host_fd();
  pid_t pid() const { return pid_; }
  // Waits for the agent to exit (killing it after `limit`); returns its wait status, or -1.
  int wait(std::chrono::milliseconds limit = 5s);
  // Resident memory high-water mark of the agent, in KiB (from /proc/PID/status).
  long peak_rss_kib() const;

 private:
  pid_t pid_ = -1;
  int host_fd_ = -1;
  bool reaped_ = false;
};

// A ready channel to a real agent.
class AgentHarness {
 public:
  explicit AgentHarness(const std::vector<std::string>& agent_args = {}, channel::ChannelOptions options = {});
  ~AgentHarness();

  Loop loop;
  std::unique_ptr<AgentProcess> agent;
  std::unique_ptr<channel::GuestChannel> channel;
  std::unique_ptr<channel::AgentClient> client;
  std::optional<protocol::channel::HelloResult> hello;
  std::optional<Error> failure;

  // Closes the channel, waits for the agent to exit, and returns uv_loop_close()'s result.
  int shutdown();

 private:
  bool shut_ = false;
};

// Everything one process produced.
struct ProcessRun {
  std::int64_t pid = 0;
  std::string out, err, pty;
  std::optional<protocol::channel::ProcessExited> exit;
  std::optional<Error> start_error;
  int ended_outputs = 0;
  bool started = false;
  bool done(bool pty_mode) const { return start_error || (exit && ended_outputs >= (pty_mode ? 1 : 2)); }
};

std::shared_ptr<ProcessRun> start_process(AgentHarness& h, const protocol::channel::ProcessStartParams& params);
// Starts a process and runs the loop until it has exited and its output ended.
std::shared_ptr<ProcessRun> run_process(AgentHarness& h, const protocol::channel::ProcessStartParams& params,
                                        std::chrono::milliseconds limit = 20s);
protocol::channel::ProcessStartParams argv(std::vector<std::string> args);

// Bytes from small integers, for hand-made frames and protocol bytes.
inline std::string bytes(std::initializer_list<int> values) {
  std::string s;
  for (int v : values) s.push_back(static_cast<char>(v));
  return s;
}

}  // namespace lockroom::testing
