// build_qemu_argv; see qemu_argv.h.
#include "server/vm/qemu_argv.h"

namespace lockroom::vm {

namespace {

Result<void> check_path(const char* what, const std::filesystem::path& p) {
  if (p.empty() || !p.is_absolute())
    return make_error(ErrorCode::kInvalidInput, std::string(what) + " must be an absolute path, got \"" + p.string() + "\"");
  return {};
}

}  // namespace

std::string qemu_escape(const std::string& value) {
  std::string out;
  for (char c : value) {
    out.push_back(c);
    if (c == ',') out.push_back(',');
  }
  return out;
}

QemuStatePaths qemu_state_paths(const std::filesystem::path& dir) {
  return {dir / "console.log", dir / "qmp.sock", dir / "channel.sock"};
}

std::string kernel_cmdline(const KernelCmdlineOptions& o) {
  std::string s = "console=ttyS0 quiet panic=-1";
  if (o.tsc_khz) s += " tsc_early_khz=" + std::to_string(*o.tsc_khz) + " tsc=reliable";
  s += " lockroom.port=" + o.channel_name;
  for (const auto& w : o.extra) s += " " + w;
  return s;
}

Result<std::vector<std::string>> build_qemu_argv(const QemuConfig& c) {
  if (c.vcpus < 1 || c.vcpus > 64)
    return make_error(ErrorCode::kInvalidInput, "vCPUs must be between 1 and 64, got " + std::to_string(c.vcpus));
  if (c.memory_mib < 64 || c.memory_mib > 1024 * 1024)
    return make_error(ErrorCode::kInvalidInput, "memory must be at least 64 MiB, got " + std::to_string(c.memory_mib) + " MiB");
  if (c.tcg_tb_size_mib < 1)
    return make_error(ErrorCode::kInvalidInput, "the TCG translation cache must be at least 1 MiB");
  for (auto [what, p] : {std::pair{"the kernel", &c.kernel}, {"the initrd", &c.initrd}, {"the state dir", &c.state_dir}})
    if (auto ok = check_path(what, *p); !ok) return ok.error();
  if (c.ram != RamMode::kAnonymous)
    if (auto ok = check_path("the RAM file", c.ram_file); !ok) return ok.error();
  if (c.channel_name.empty() || c.channel_name.find_first_of(", =") != std::string::npos)
    return make_error(ErrorCode::kInvalidInput, "the channel name \"" + c.channel_name + "\" must be non-empty, without ',', ' ' or '='");

  auto paths = qemu_state_paths(c.state_dir);
  std::string mem = std::to_string(c.memory_mib) + "M";
  std::vector<std::string> a = {c.qemu};
  a.insert(a.end(), {"-M", c.ram == RamMode::kAnonymous ? "microvm" : "microvm,memory-backend=mem"});
  if (c.accel == Accel::kKvm) {
    a.insert(a.end(), {"-accel", "kvm", "-cpu", "host"});
  } else {
    std::string tcg = "tcg";
    if (c.vcpus > 1) tcg += ",thread=multi";
    tcg += ",tb-size=" + std::to_string(c.tcg_tb_size_mib);
    a.insert(a.end(), {"-accel", tcg});
  }
  a.insert(a.end(), {"-smp", std::to_string(c.vcpus), "-m", mem});
  if (c.ram != RamMode::kAnonymous) {
    a.insert(a.end(), {"-object", "memory-backend-file,id=mem,size=" + mem + ",mem-path=" + qemu_escape(c.ram_file.string()) +
                                      (c.ram == RamMode::kTemplate ? ",share=on" : ",share=off")});
  }
  a.insert(a.end(), {"-nodefaults", "-no-user-config", "-display", "none", "-no-reboot"});
  a.insert(a.end(), {"-serial", "file:" + paths.console_log.string()});
  a.insert(a.end(), {"-kernel", c.kernel.string(), "-initrd", c.initrd.string(), "-append", c.kernel_cmdline});
  a.insert(a.end(), {"-device", "virtio-serial-device"});
  a.insert(a.end(), {"-chardev", "socket,id=channel,path=" + qemu_escape(paths.channel_socket.string()) + ",server=on,wait=off"});
  a.insert(a.end(), {"-device", "virtserialport,chardev=channel,name=" + c.channel_name});
  a.insert(a.end(), {"-qmp", "unix:" + qemu_escape(paths.qmp_socket.string()) + ",server=on,wait=off"});
  a.insert(a.end(), {"-sandbox", "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny"});
  if (c.ram == RamMode::kRestore) a.insert(a.end(), {"-incoming", "defer"});
  return a;
}

}  // namespace lockroom::vm
