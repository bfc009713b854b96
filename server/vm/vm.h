// Vm: one QEMU process for one sandbox, on the libuv loop.
//
// start() creates the sandbox's state dir (0700, `<state>/vms/<lockroom pid>-<seq>-<name>`, so a
// later lockroom can tell orphans by their dead owner's pid), spawns QEMU with the argv from
// qemu_argv.h in its own process group (stdout/stderr to `qemu.log` there), and watches it exit.
// Readiness is pluggable: the check gets the Vm and reports once; a boot watchdog turns a guest
// that never becomes ready into a clear error (with the console's last line), never a hang.
// kill() ends QEMU; when it has exited the state dir is deleted and on_exit runs with the
// reason. Loop thread only; on_ready and on_exit may destroy the Vm.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <uv.h>

#include "server/common/result.h"
#include "server/vm/qemu_argv.h"
#include "server/vm/qmp_client.h"

namespace lockroom::vm {

struct VmExit {
  std::int64_t exit_status = 0;
  int term_signal = 0;
  std::string reason;  // "QEMU exited with status 1", "QEMU was killed by signal 9", …
  bool requested = false;  // kill() was called
  std::optional<int> killed_by_pid;  // another process asked for it (`lockroom kill`; see kill_request_path)
};

class Vm;
// Calls `done` once: ok when the guest is ready to be talked to.
using ReadinessCheck = std::function<void(Vm& vm, std::function<void(Result<void>)> done)>;

struct VmSpec {
  QemuConfig qemu;                      // state_dir is filled in by start()
  std::filesystem::path state_root;     // paths.h state dir
  std::string name = "vm";
  std::chrono::milliseconds boot_timeout{60000};
  ReadinessCheck readiness;             // default: the guest writes a first byte on the channel
  bool connect_qmp = true;
};

struct VmCallbacks {
  std::function<void(Result<void>)> on_ready;  // once: ready, or why not (then the VM is killed)
  std::function<void(const VmExit&)> on_exit;  // once, after the state dir is gone
};

class Vm {
 public:
  static Result<std::unique_ptr<Vm>> start(uv_loop_t* loop, VmSpec spec, VmCallbacks callbacks);
  ~Vm();
  Vm(const Vm&) = delete;
  Vm& operator=(const Vm&) = delete;

  void kill();
  bool running() const { return process_ != nullptr; }
  int pid() const { return pid_; }
  const std::filesystem::path& state_dir() const { return state_dir_; }
  QemuStatePaths paths() const { return qemu_state_paths(state_dir_); }
  QmpClient& qmp() { return *qmp_; }
  uv_loop_t* loop() const { return loop_; }
  // Expires (or reads false) once the Vm is destroyed: for work that outlives a callback.
  std::weak_ptr<bool> lifetime() const { return alive_; }
  // The last non-empty line of the serial console, for error messages.
  std::string console_tail() const;

 private:
  Vm(uv_loop_t* loop, VmSpec spec, VmCallbacks callbacks);
  Result<void> spawn();
  void on_process_exit(std::int64_t status, int signal);
  void ready_result(Result<void> r);

  uv_loop_t* loop_;
  VmSpec spec_;
  VmCallbacks callbacks_;
  std::filesystem::path state_dir_;
  uv_process_t* process_ = nullptr;
  uv_timer_t* watchdog_ = nullptr;
  std::unique_ptr<QmpClient> qmp_;
  int pid_ = 0;
  bool ready_reported_ = false;
  bool kill_requested_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// Readiness by the default rule: QEMU's channel socket accepts and the guest writes a byte.
ReadinessCheck first_byte_readiness();

// The marker another process writes (its pid) before it kills a Vm's QEMU, so the owner can tell
// a requested kill from a crash.
std::filesystem::path kill_request_path(const std::filesystem::path& state_dir);

// `<state_root>/vms`: where Vm state dirs live.
std::filesystem::path vm_state_root(const std::filesystem::path& state_root);

}  // namespace lockroom::vm
