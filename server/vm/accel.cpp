// Accelerator choice; see accel.h.
#include "server/vm/accel.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace lockroom::vm {

const char* accel_name(Accel accel) { return accel == Accel::kKvm ? "kvm" : "tcg"; }

bool cpuinfo_has_virt_flag(const std::string& cpuinfo) {
  std::istringstream in(cpuinfo);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream flags(line.substr(line.find(':') == std::string::npos ? line.size() : line.find(':') + 1));
    std::string flag;
    while (flags >> flag)
      if (flag == "vmx" || flag == "svm") return true;
  }
  return false;
}

HostVirt probe_host_virt() {
  HostVirt host;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::stringstream text;
  text << cpuinfo.rdbuf();
  host.cpu_virt_flag = cpuinfo_has_virt_flag(text.str());
  host.kvm_device = access("/dev/kvm", F_OK) == 0;
  if (host.kvm_device) {
    int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
      host.kvm_openable = true;
      close(fd);
    } else {
      host.kvm_error = std::strerror(errno);
    }
  }
  return host;
}

AccelChoice choose_accel(const HostVirt& host, AccelPreference preference) {
  if (preference == AccelPreference::kTcg) return {Accel::kTcg, "TCG was requested (software emulation)"};
  if (preference == AccelPreference::kKvm) {
    if (!host.kvm_openable)
      return {Accel::kTcg, "KVM was requested but /dev/kvm cannot be opened" +
                               (host.kvm_error.empty() ? std::string() : " (" + host.kvm_error + ")") +
                               "; using TCG (software emulation)"};
    return {Accel::kKvm, "KVM was requested and /dev/kvm opens"};
  }
  if (!host.kvm_device) return {Accel::kTcg, "/dev/kvm does not exist; guests run under TCG (software emulation, slower)"};
  if (!host.kvm_openable)
    return {Accel::kTcg, "/dev/kvm cannot be opened" + (host.kvm_error.empty() ? std::string() : " (" + host.kvm_error + ")") +
                             "; add your user to the kvm group for hardware speed. Guests run under TCG meanwhile"};
  if (!host.cpu_virt_flag)
    return {Accel::kTcg,
            "/dev/kvm opens but the CPU flags show neither vmx nor svm (a para-virtualised nested hypervisor), under "
            "which a stock guest kernel hangs; guests run under TCG. Force KVM with LOCKROOM_ACCEL=kvm if you know it works"};
  return {Accel::kKvm, "/dev/kvm opens and the CPU has hardware virtualisation (vmx/svm)"};
}

}  // namespace lockroom::vm
