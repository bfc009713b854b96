// The agent's loop and methods; see agent.h.
#include "guest/agent.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "guest/log.h"
#include "guest/pid1.h"
#include "guest/system_ops.h"
#include "protocol/channel/messages.h"

namespace lockroom::agent {

namespace channel = protocol::channel;

namespace {
constexpr int kWaitingPollMs = 5;  // how often a port without a host is checked
}  // namespace

Agent::Agent(const AgentSettings& settings, Transport transport, bool pid1)
    : settings_(settings),
      pid1_(pid1),
      connection_(std::move(transport), channel::Settings{}),
      rpc_([this](const std::string& text) { connection_.send_message(text); }),
      processes_(connection_, limits_, base_environment(pid1)),
      files_(connection_),
      workspace_(connection_),
      net_(connection_, settings_.net) {
  limits_.init(settings_, pid1_);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  signal_fd_ = ::signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  if (signal_fd_ < 0) log_error(std::string("signalfd failed; exits are found by polling: ") + std::strerror(errno));
  processes_.set_session_env([this] { return net_.environment(); });
  limits_.on_limit_reached([this](const channel::LimitReached& note) {
    connection_.send_message(protocol::encode_notification(channel::method::kLimitReached, channel::to_json(note)));
  });
  workspace_.on_changed([this](const std::string& path) {
    if (!rpc_.ready()) return;  // no host to tell: the next one lists the workspace anyway
    connection_.send_message(protocol::encode_notification(channel::method::kWorkspaceChanged,
                                                           channel::to_json(channel::WorkspaceChanged{path})));
  });
  connection_.set_message_handler([this](std::string_view text) { rpc_.handle(text); });
  connection_.set_session_lost_handler([this](const std::string& why) { on_session_lost(why); });
  bind_methods();
}

Agent::~Agent() {
  if (signal_fd_ >= 0) ::close(signal_fd_);
}

void Agent::bind_methods() {
  rpc_.on(channel::method::kHello, [this](const json& p) { return on_hello(p); });
  rpc_.on(channel::method::kHealth, [this](const json&) {
    return health(HealthCounts{processes_.running(), connection_.session().stream_count()});
  });
  rpc_.on(channel::method::kGuestResume, [this](const json& p) { return guest_resume(p, settings_.set_clock); });
  rpc_.on(channel::method::kLimitsSet, [this](const json& p) { return limits_.set(p); });
  rpc_.on(channel::method::kProcessStart, [this](const json& p) { return processes_.start(p); });
  rpc_.on(channel::method::kProcessResize, [this](const json& p) { return processes_.resize(p); });
  rpc_.on(channel::method::kProcessSignal, [this](const json& p) { return processes_.signal(p); });
  rpc_.on(channel::method::kFileRead, [this](const json& p) { return files_.read(p); });
  rpc_.on(channel::method::kFileWrite, [this](const json& p) { return files_.write(p); });
  rpc_.on(channel::method::kFileStat, [this](const json& p) { return files_.stat(p); });
  rpc_.on(channel::method::kFileList, [this](const json& p) { return files_.list(p); });
  rpc_.on(channel::method::kWorkspaceImport, [this](const json& p) { return workspace_.import(p); });
  rpc_.on(channel::method::kWorkspaceCheckout, [this](const json& p) { return workspace_.checkout(p); });
  rpc_.on(channel::method::kWorkspaceManifest, [this](const json& p) { return workspace_.manifest(p); });
  rpc_.on(channel::method::kWorkspaceExport, [this](const json& p) { return workspace_.export_files(p); });
  rpc_.on(channel::method::kNetEnable, [this](const json& p) { return net_.enable(p); });
  rpc_.on(channel::method::kNetTrust, [this](const json& p) { return net_.trust(p); });
  rpc_.on(channel::method::kNetAccept, [this](const json& p) { return net_.accept(p); });
  rpc_.on(channel::method::kNetRefuse, [this](const json& p) { return net_.refuse(p); });
}

Outcome Agent::on_hello(const json& params) {
  auto parsed = channel::parse_hello_params(params);
  if (!parsed) return invalid_params(parsed.error());
  if (parsed->protocol != channel::kProtocolVersion)
    return make_rpc_error(channel::agent_error::kUnsupportedProtocol,
                          "the host speaks channel protocol " + std::to_string(parsed->protocol) + ", this agent speaks " +
                              std::to_string(channel::kProtocolVersion) + ": rebuild the guest image with a matching lockroom-agent",
                          json{{"supported", json::array({channel::kProtocolVersion})}});
  if (rpc_.ready()) connection_.restart_session("the host said hello again: a new session starts");
  if (auto established = connection_.establish(parsed->settings); !established) return invalid_params(established.error());
  rpc_.set_ready(true);
  log_info("serving host " + parsed->host_version);
  channel::HelloResult result;
  result.agent_version = LOCKROOM_VERSION;
  result.settings = connection_.session().mine();
  result.pid = ::getpid();
  result.process_limit = limits_.enforcement();
  return channel::to_json(result);
}

void Agent::on_session_lost(const std::string& why) {
  log_info("session ended: " + why);
  rpc_.set_ready(false);
  processes_.abandon_all();
  files_.abandon_all();
  workspace_.abandon_all();
  net_.abandon_all();
}

void Agent::drain_signals() {
  signalfd_siginfo info;
  while (signal_fd_ >= 0 && ::read(signal_fd_, &info, sizeof info) == sizeof info) {
  }
  processes_.reap();
}

void Agent::turn() {
  PollSet set;
  if (signal_fd_ >= 0) set.add(signal_fd_, POLLIN, [this](short) { drain_signals(); });
  if (short events = connection_.poll_events()) set.add(connection_.fd(), events, [this](short r) { connection_.on_poll(r); });
  processes_.add_polls(set);
  net_.add_polls(set);
  workspace_.add_polls(set);

  int timeout = processes_.timeout_ms();
  auto sooner = [&timeout](int ms) { timeout = timeout < 0 ? ms : std::min(timeout, ms); };
  if (connection_.state() == Connection::State::kWaiting) sooner(kWaitingPollMs);
  if (signal_fd_ < 0) sooner(50);
  if (files_.ready() || workspace_.ready()) sooner(0);
  bool attached = connection_.state() == Connection::State::kActive;
  if (attached) sooner(limits_.watch_timeout_ms(std::chrono::steady_clock::now()));
  if (int ms = workspace_.timeout_ms(std::chrono::steady_clock::now()); ms >= 0) sooner(ms);

  int n = ::poll(set.fds.data(), set.fds.size(), timeout);
  if (n < 0 && errno != EINTR) log_error(std::string("poll failed: ") + std::strerror(errno));
  for (std::size_t i = 0; n > 0 && i < set.fds.size(); ++i)
    if (set.fds[i].revents) set.handlers[i](set.fds[i].revents);
  if (signal_fd_ < 0) processes_.reap();
  connection_.check_host();
  files_.pump();
  workspace_.pump();
  net_.pump();
  processes_.advance();
  if (attached) limits_.watch(std::chrono::steady_clock::now());
  connection_.flush();
}

int Agent::run() {
  for (;;) {
    if (connection_.state() == Connection::State::kClosed) {
      processes_.abandon_all();
      return 0;
    }
    try {
      turn();
    } catch (const std::exception& e) {
      log_error(std::string("a loop turn failed and was skipped: ") + e.what());
    }
  }
}

}  // namespace lockroom::agent
