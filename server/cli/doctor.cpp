// lockroom doctor; see doctor.h.
#include "server/cli/doctor.h"

#include <sys/statvfs.h>

#include <cstdlib>
#include <sstream>

#include "server/common/subprocess.h"
#include "server/vm/image/guest_tools.h"

namespace lockroom::cli {

namespace {

std::string qemu_binary() {
  const char* env = std::getenv("LOCKROOM_QEMU");
  return env && *env ? env : "qemu-system-x86_64";
}

DiskInfo disk_info(const std::filesystem::path& path) {
  DiskInfo info{path.string(), std::nullopt};
  std::filesystem::path probe = path;
  std::error_code ec;
  while (!probe.empty() && !std::filesystem::exists(probe, ec)) probe = probe.parent_path();
  struct statvfs fs {};
  if (!probe.empty() && statvfs(probe.c_str(), &fs) == 0) info.free_bytes = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
  return info;
}

std::string human_bytes(std::uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  std::ostringstream out;
  out.precision(u == 0 ? 0 : 1);
  out << std::fixed << v << " " << units[u];
  return out.str();
}

// "QEMU emulator version 7.2.19 (Debian 1:7.2+dfsg-7+deb12u18)" -> "7.2.19"
std::string parse_qemu_version(const std::string& text) {
  const std::string marker = "version ";
  std::size_t at = text.find(marker);
  if (at == std::string::npos) return "";
  std::size_t start = at + marker.size();
  std::size_t end = text.find_first_of(" \n", start);
  return text.substr(start, end - start);
}

}  // namespace

MachineReport probe_machine(const std::string& lockroom_version) {
  MachineReport r;
  r.lockroom_version = lockroom_version;
  if (auto qemu = find_program(qemu_binary())) {
    r.qemu_path = qemu->string();
    if (auto out = run_capture({r.qemu_path, "--version"}); out && out->exit_code == 0)
      r.qemu_version = parse_qemu_version(out->output);
    if (auto out = run_capture({r.qemu_path, "-machine", "help"}); out && out->exit_code == 0)
      r.qemu_microvm = out->output.find("microvm") != std::string::npos;
  }
  r.host_virt = vm::probe_host_virt();
  vm::AccelPreference pref = vm::AccelPreference::kAuto;
  if (const char* a = std::getenv("LOCKROOM_ACCEL")) {
    if (std::string(a) == "kvm") pref = vm::AccelPreference::kKvm;
    if (std::string(a) == "tcg") pref = vm::AccelPreference::kTcg;
  }
  r.accel = vm::choose_accel(r.host_virt, pref);
  for (const char* candidate : {"/bin/busybox", "/usr/bin/busybox"}) {
    if (auto p = find_program(candidate)) {
      r.busybox_path = p->string();
      break;
    }
  }
  r.apt_available = find_program("apt-get").has_value() && find_program("dpkg-deb").has_value();
  for (const auto& missing : vm::image::find_guest_tools().missing) r.guest_tools_missing.push_back(missing.reason);
  Paths paths = default_paths();
  r.cache = disk_info(paths.cache);
  r.state = disk_info(paths.state);
  return r;
}

std::string render_text(const MachineReport& r) {
  std::ostringstream out;
  auto line = [&](bool ok, const std::string& text) { out << (ok ? "  ok    " : "  MISS  ") << text << "\n"; };
  out << "lockroom " << r.lockroom_version << "\n\n";
  out << "Virtual machines\n";
  if (r.qemu_path.empty()) {
    line(false, "QEMU not found (" + qemu_binary() + "). Fix: sudo apt-get install qemu-system-x86");
  } else {
    line(true, "QEMU " + (r.qemu_version.empty() ? std::string("(version unknown)") : r.qemu_version) + " at " + r.qemu_path);
    line(r.qemu_microvm, r.qemu_microvm ? "the microvm machine type is available"
                                        : "this QEMU has no microvm machine type. Fix: install Debian's qemu-system-x86 (7.2 or newer)");
  }
  out << "  info  /dev/kvm: " << (!r.host_virt.kvm_device ? "absent" : r.host_virt.kvm_openable ? "opens read-write" : "present but not usable (" + r.host_virt.kvm_error + ")")
      << "; CPU virtualisation flags (vmx/svm): " << (r.host_virt.cpu_virt_flag ? "yes" : "no") << "\n";
  out << "  info  accelerator: " << vm::accel_name(r.accel.accel) << " — " << r.accel.reason << "\n";
  out << "\nGuest image ingredients\n";
  line(!r.busybox_path.empty(), r.busybox_path.empty() ? "busybox not found. Fix: sudo apt-get install busybox-static"
                                                        : "busybox at " + r.busybox_path);
  line(r.apt_available, r.apt_available ? "apt-get and dpkg-deb, to fetch the guest kernel package"
                                        : "apt-get/dpkg-deb missing: the guest kernel cannot be fetched (Debian or Ubuntu hosts only)");
  if (r.guest_tools_missing.empty()) line(true, "curl and git over https for the guest (from this host)");
  for (const auto& why : r.guest_tools_missing) out << "  info  optional: " << why << "\n";
  out << "\nStorage\n";
  for (const auto& [label, d] : {std::pair{"cache", r.cache}, std::pair{"state", r.state}}) {
    out << "  info  " << label << ": " << d.path << " ("
        << (d.free_bytes ? human_bytes(*d.free_bytes) + " free" : std::string("free space unknown")) << ")\n";
  }
  out << "\n" << (r.ready() ? "This machine can run lockroom sandboxes." : "This machine cannot run sandboxes yet: fix the MISS lines above.")
      << "\n";
  return out.str();
}

nlohmann::json render_json(const MachineReport& r) {
  auto disk = [](const DiskInfo& d) {
    return nlohmann::json{{"path", d.path}, {"freeBytes", d.free_bytes ? nlohmann::json(*d.free_bytes) : nlohmann::json(nullptr)}};
  };
  return nlohmann::json{
      {"version", r.lockroom_version},
      {"ready", r.ready()},
      {"qemu", {{"path", r.qemu_path.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.qemu_path)},
                {"version", r.qemu_version.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.qemu_version)},
                {"microvm", r.qemu_microvm}}},
      {"kvm", {{"device", r.host_virt.kvm_device}, {"openable", r.host_virt.kvm_openable},
               {"cpuVirtualizationFlag", r.host_virt.cpu_virt_flag}}},
      {"accel", {{"choice", vm::accel_name(r.accel.accel)}, {"reason", r.accel.reason}}},
      {"busybox", r.busybox_path.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.busybox_path)},
      {"apt", r.apt_available},
      {"guestToolsMissing", r.guest_tools_missing},
      {"cache", disk(r.cache)},
      {"state", disk(r.state)},
  };
}

}  // namespace lockroom::cli
