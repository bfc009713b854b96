// The QEMU command line for one sandbox, as a pure function of its configuration.
//
// Always: `-M microvm`, no defaults, no user config, no display, no network device, no host file
// sharing, the serial console to `<state>/console.log`, one virtio-serial port (named after the
// channel) on a unix-socket chardev `<state>/channel.sock`, QMP on `<state>/qmp.sock`, QEMU's
// strict seccomp sandbox, and `-no-reboot` so a guest that panics or powers off ends QEMU.
// RAM is anonymous for a one-off guest; file-backed for fast start: `kTemplate` maps the file
// shared (a template whose pages the restores will share), `kRestore` maps it private
// (copy-on-write) and waits for `migrate-incoming` (`-incoming defer`). Called from the Vm
// (loop thread); no I/O.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "server/common/result.h"
#include "server/vm/accel.h"

namespace lockroom::vm {

enum class RamMode { kAnonymous, kTemplate, kRestore };

struct QemuConfig {
  std::string qemu = "qemu-system-x86_64";
  Accel accel = Accel::kTcg;
  int vcpus = 1;
  int memory_mib = 256;
  int tcg_tb_size_mib = 64;  // TCG translation cache: QEMU's default (1 GiB) costs RSS per guest
  std::filesystem::path kernel;
  std::filesystem::path initrd;
  std::string kernel_cmdline;  // see kernel_cmdline()
  std::filesystem::path state_dir;
  std::string channel_name = "agent";
  RamMode ram = RamMode::kAnonymous;
  std::filesystem::path ram_file;  // kTemplate / kRestore: the guest RAM file (on /dev/shm)
};

// The files QEMU makes in the state dir.
struct QemuStatePaths {
  std::filesystem::path console_log;
  std::filesystem::path qmp_socket;
  std::filesystem::path channel_socket;
};
QemuStatePaths qemu_state_paths(const std::filesystem::path& state_dir);

// Fails, naming the value, on a configuration QEMU would refuse or lockroom must not run.
Result<std::vector<std::string>> build_qemu_argv(const QemuConfig& config);

struct KernelCmdlineOptions {
  std::string channel_name = "agent";
  std::optional<long> tsc_khz;  // under TCG: the host TSC rate, so the guest need not calibrate
  std::vector<std::string> extra;  // more `lockroom.*` words for the agent
};
std::string kernel_cmdline(const KernelCmdlineOptions& options);

// QEMU option values use ',' as a separator: a literal comma is written twice.
std::string qemu_escape(const std::string& value);

}  // namespace lockroom::vm
