// The channel test harness; see channel_harness.h.
#include "tests/unit/channel/channel_harness.h"

#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace lockroom::testing {

namespace wire = protocol::channel;

Loop::Loop() {
  uv_loop_init(&loop_);
  uv_timer_init(&loop_, &tick_);
}

Loop::~Loop() {
  if (finished_) return;
  uv_walk(
      &loop_, [](uv_handle_t* h, void*) { if (!uv_is_closing(h)) uv_close(h, nullptr); }, nullptr);
  uv_run(&loop_, UV_RUN_DEFAULT);
  uv_loop_close(&loop_);
}

bool Loop::run_until(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  uv_timer_start(&tick_, [](uv_timer_t*) {}, 5, 5);  // wakes the loop so the deadline is checked
  bool ok = true;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) {
      ok = false;
      break;
    }
    uv_run(&loop_, UV_RUN_ONCE);
  }
  uv_timer_stop(&tick_);
  return ok;
}

int Loop::finish() {
  if (!uv_is_closing(reinterpret_cast<uv_handle_t*>(&tick_))) uv_close(reinterpret_cast<uv_handle_t*>(&tick_), nullptr);
  uv_run(&loop_, UV_RUN_DEFAULT);
  int rc = uv_loop_close(&loop_);
  finished_ = rc == 0;
  return rc;
}

AgentProcess::AgentProcess(const std::vector<std::string>& extra_args) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) throw std::runtime_error("socketpair failed");
  std::vector<std::string> args = {LOCKROOM_AGENT_PATH, "--fd", "3", "--no-clock", "--log-level", "warning"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, sv[1], 3);
  int rc = posix_spawn(&pid_, LOCKROOM_AGENT_PATH, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(sv[1]);
  if (rc != 0) {
    ::close(sv[0]);
    throw std::runtime_error("cannot start " LOCKROOM_AGENT_PATH);
  }
  host_fd_ = sv[0];
}

AgentProcess::~AgentProcess() {
  if (host_fd_ >= 0) ::close(host_fd_);
  if (!reaped_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

int AgentProcess::take_host_fd() {
  int fd = host_fd_;
  host_fd_ = -1;
  return fd;
}

int AgentProcess::wait(std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (!reaped_) {
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      return status;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      reaped_ = true;
      return -1;
    }
    std::this_thread::sleep_for(2ms);
  }
  return -1;
}

long AgentProcess::peak_rss_kib() const {
  std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
  std::string key;
  while (status >> key) {
    if (key == "VmHWM:") {
      long kib = 0;
      status >> kib;
      return kib;
    }
    std::getline(status, key);
  }
  return -1;
}

AgentHarness::AgentHarness(const std::vector<std::string>& agent_args, channel::ChannelOptions options) {
  agent = std::make_unique<AgentProcess>(agent_args);
  channel = std::make_unique<channel::GuestChannel>(loop.get(), options);
  bool answered = false;
  auto started = channel->start(
      agent->take_host_fd(),
      [this, &answered](Result<wire::HelloResult> r) {
        answered = true;
        if (r) {
          hello = *r;
        } else {
          failure = r.error();
        }
      },
      [this](const Error& e) { failure = e; });
  if (!started) throw std::runtime_error(started.error().message);
  if (!loop.run_until([&] { return answered; }, 10s)) throw std::runtime_error("the agent did not answer hello");
  client = std::make_unique<channel::AgentClient>(*channel);
}

int AgentHarness::shutdown() {
  if (shut_) return 0;
  shut_ = true;
  client.reset();
  bool closed = false;
  channel->close([&closed] { closed = true; });
  loop.run_until([&] { return closed; }, 5s);
  channel.reset();
  agent->wait();
  return loop.finish();
}

AgentHarness::~AgentHarness() { shutdown(); }

wire::ProcessStartParams argv(std::vector<std::string> args) {
  wire::ProcessStartParams p;
  p.argv = std::move(args);
  return p;
}

std::shared_ptr<ProcessRun> start_process(AgentHarness& h, const wire::ProcessStartParams& params) {
  auto run = std::make_shared<ProcessRun>();
  channel::ProcessEvents events;
  events.on_output = [run](channel::OutputKind kind, std::string_view bytes) {
    (kind == channel::OutputKind::kStdout ? run->out : kind == channel::OutputKind::kStderr ? run->err : run->pty).append(bytes);
  };
  events.on_output_end = [run](channel::OutputKind) { run->ended_outputs++; };
  events.on_exit = [run](const wire::ProcessExited& e) { run->exit = e; };
  h.client->start_process(params, events, [run](Result<wire::ProcessStartResult> r) {
    if (!r) {
      run->start_error = r.error();
      return;
    }
    run->started = true;
    run->pid = r->pid;
  });
  return run;
}

std::shared_ptr<ProcessRun> run_process(AgentHarness& h, const wire::ProcessStartParams& params, std::chrono::milliseconds limit) {
  auto run = start_process(h, params);
  bool pty = params.pty.has_value();
  h.loop.run_until([&] { return run->done(pty) || h.failure.has_value(); }, limit);
  return run;
}

}  // namespace lockroom::testing
