// Vm; see vm.h.
#include "server/vm/vm.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>

#include <spdlog/spdlog.h>

#include "server/common/subprocess.h"
#include "server/common/uv_handle.h"
#include "server/vm/channel_probe.h"

namespace lockroom::vm {

namespace fs = std::filesystem;

namespace {
std::atomic<unsigned> g_seq{0};

// The pid in a state dir's kill-request marker, if one was left there.
std::optional<int> kill_requester(const fs::path& state_dir) {
  if (state_dir.empty()) return std::nullopt;
  std::ifstream in(kill_request_path(state_dir));
  int pid = 0;
  if (in >> pid && pid > 0) return pid;
  return std::nullopt;
}
}

fs::path vm_state_root(const fs::path& state_root) { return state_root / "vms"; }

fs::path kill_request_path(const fs::path& state_dir) { return state_dir / "kill-requested"; }

ReadinessCheck first_byte_readiness() {
  return [](Vm& vm, std::function<void(Result<void>)> done) {
    auto probe = std::make_shared<std::unique_ptr<ChannelProbe>>();
    *probe = std::make_unique<ChannelProbe>(vm.loop(), vm.paths().channel_socket, [probe, done](Result<std::string> r) {
      // Destroy the probe after this callback returns: it still runs inside it.
      auto keep = std::move(*probe);
      done(r.ok() ? Result<void>() : Result<void>(r.error()));
      (void)keep;
    });
    (*probe)->start();
  };
}

Vm::Vm(uv_loop_t* loop, VmSpec spec, VmCallbacks callbacks)
    : loop_(loop), spec_(std::move(spec)), callbacks_(std::move(callbacks)) {}

Vm::~Vm() {
  *alive_ = false;
  if (process_) {
    // Destroyed while QEMU runs: end it now and reap it (libuv stops watching a closed handle).
    uv_process_kill(process_, SIGKILL);
    close_handle(process_);
    for (int i = 0; i < 100 && waitpid(pid_, nullptr, WNOHANG) == 0; ++i) usleep(1000);
  }
  close_handle(watchdog_);
  qmp_.reset();
  std::error_code ec;
  if (!state_dir_.empty()) fs::remove_all(state_dir_, ec);
}

Result<std::unique_ptr<Vm>> Vm::start(uv_loop_t* loop, VmSpec spec, VmCallbacks callbacks) {
  std::unique_ptr<Vm> vm(new Vm(loop, std::move(spec), std::move(callbacks)));
  fs::path root = vm_state_root(vm->spec_.state_root);
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) return make_error(ErrorCode::kUnavailable, "cannot create the state dir " + root.string() + ": " + ec.message());
  vm->state_dir_ = root / (std::to_string(getpid()) + "-" + std::to_string(++g_seq) + "-" + vm->spec_.name);
  if (mkdir(vm->state_dir_.c_str(), 0700) != 0) {
    auto err = make_error(ErrorCode::kUnavailable, "cannot create " + vm->state_dir_.string() + ": " + std::strerror(errno));
    vm->state_dir_.clear();
    return err;
  }
  vm->spec_.qemu.state_dir = vm->state_dir_;
  if (auto ok = vm->spawn(); !ok) return ok.error();
  return vm;
}

namespace {

// setpriv(1) (util-linux) runs QEMU with PR_SET_PDEATHSIG = SIGKILL, which survives its exec:
// QEMU then dies with the lockroom process that started it (a server the editor killed, a test
// or benchmark binary that exited) instead of running on, orphaned. Checked once; without it
// QEMU runs as before.
const std::vector<std::string>& die_with_parent_prefix() {
  static const std::vector<std::string> prefix = [] {
    auto probe = run_capture({"setpriv", "--pdeathsig", "KILL", "--", "true"});
    if (probe && probe->exit_code == 0) return std::vector<std::string>{"setpriv", "--pdeathsig", "KILL", "--"};
    spdlog::debug("setpriv --pdeathsig is not available: a VM outlives a lockroom that dies without stopping it");
    return std::vector<std::string>{};
  }();
  return prefix;
}

}  // namespace

Result<void> Vm::spawn() {
  auto argv = build_qemu_argv(spec_.qemu);
  if (!argv) return argv.error();
  const auto& prefix = die_with_parent_prefix();
  argv->insert(argv->begin(), prefix.begin(), prefix.end());
  int log_fd = open((state_dir_ / "qemu.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (log_fd < 0) return make_error(ErrorCode::kUnavailable, "cannot create qemu.log in " + state_dir_.string());
  std::vector<char*> args;
  for (auto& a : *argv) args.push_back(a.data());
  args.push_back(nullptr);
  uv_stdio_container_t stdio[3];
  stdio[0].flags = UV_IGNORE;
  stdio[1].flags = UV_INHERIT_FD;
  stdio[1].data.fd = log_fd;
  stdio[2].flags = UV_INHERIT_FD;
  stdio[2].data.fd = log_fd;
  uv_process_options_t options{};
  options.file = args[0];
  options.args = args.data();
  options.stdio = stdio;
  options.stdio_count = 3;
  options.flags = UV_PROCESS_DETACHED;  // its own session and process group
  options.exit_cb = [](uv_process_t* p, int64_t status, int signal) {
    if (auto* self = static_cast<Vm*>(p->data)) self->on_process_exit(status, signal);
  };
  process_ = new_handle<uv_process_t>(this);
  int rc = uv_spawn(loop_, process_, &options);
  ::close(log_fd);
  if (rc < 0) {
    close_handle(process_);  // uv_spawn initialised it even on failure
    return make_error(ErrorCode::kUnavailable, "cannot start " + spec_.qemu.qemu + ": " + uv_strerror(rc) +
                                                   ". Install QEMU (sudo apt-get install qemu-system-x86) or set LOCKROOM_QEMU");
  }
  pid_ = process_->pid;

  watchdog_ = new_handle<uv_timer_t>(this);
  uv_timer_init(loop_, watchdog_);
  uv_timer_start(watchdog_, [](uv_timer_t* t) {
    auto* self = static_cast<Vm*>(t->data);
    if (!self || self->ready_reported_) return;
    std::string tail = self->console_tail();
    self->ready_result(make_error(ErrorCode::kLimitExceeded,
                                  "the guest did not become ready within " + std::to_string(self->spec_.boot_timeout.count() / 1000) +
                                      " s" + (tail.empty() ? std::string(" (its console is empty)") : "; its console last said: " + tail) +
                                      ". Under TCG a busy host boots slowly: retry, or raise the boot timeout"));
  }, static_cast<std::uint64_t>(spec_.boot_timeout.count()), 0);

  auto alive = alive_;
  auto after_qmp = [this, alive] {
    if (!*alive) return;
    ReadinessCheck check = spec_.readiness ? spec_.readiness : first_byte_readiness();
    check(*this, [this, alive](Result<void> r) {
      if (*alive) ready_result(std::move(r));
    });
  };
  qmp_ = std::make_unique<QmpClient>(loop_);
  if (!spec_.connect_qmp) {
    after_qmp();
    return {};
  }
  qmp_->connect(paths().qmp_socket, spec_.boot_timeout, [this, alive, after_qmp](Result<void> r) {
    if (!*alive) return;
    if (!r) return ready_result(r.error());
    after_qmp();
  });
  return {};
}

void Vm::ready_result(Result<void> r) {
  if (ready_reported_) return;
  ready_reported_ = true;
  if (watchdog_) uv_timer_stop(watchdog_);
  bool ok = r.ok();
  auto alive = alive_;
  auto on_ready = std::move(callbacks_.on_ready);  // the callback may destroy the Vm
  if (on_ready) on_ready(std::move(r));
  if (*alive && !ok) kill();
}

void Vm::kill() {
  kill_requested_ = true;
  if (process_) uv_process_kill(process_, SIGKILL);
}

void Vm::on_process_exit(std::int64_t status, int signal) {
  close_handle(process_);
  close_handle(watchdog_);
  if (qmp_) qmp_->close();
  VmExit exit;
  exit.exit_status = status;
  exit.term_signal = signal;
  exit.requested = kill_requested_;
  exit.reason = signal ? "QEMU was killed by signal " + std::to_string(signal) + (kill_requested_ ? " (as asked)" : "")
                       : "QEMU exited with status " + std::to_string(status);
  if (!kill_requested_) exit.killed_by_pid = kill_requester(state_dir_);
  if (exit.killed_by_pid) exit.reason = "killed with `lockroom kill` by process " + std::to_string(*exit.killed_by_pid);
  std::string tail = console_tail();
  if (!kill_requested_ && !exit.killed_by_pid && !tail.empty()) exit.reason += "; the console last said: " + tail;
  auto alive = alive_;
  if (!ready_reported_) ready_result(make_error(ErrorCode::kUnavailable, "the guest never became ready: " + exit.reason));
  if (!*alive) return;
  std::error_code ec;
  fs::remove_all(state_dir_, ec);
  state_dir_.clear();
  auto on_exit = std::move(callbacks_.on_exit);  // the callback may destroy the Vm
  if (on_exit) on_exit(exit);
}

std::string Vm::console_tail() const {
  if (state_dir_.empty()) return "";
  std::ifstream in(paths().console_log);
  std::string line, last;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) last = line;
  }
  return last.size() > 200 ? last.substr(last.size() - 200) : last;
}

}  // namespace lockroom::vm
