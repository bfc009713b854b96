// Choosing the accelerator for guests: KVM where it works, TCG everywhere else.
//
// A stock Debian guest kernel hangs under a /dev/kvm that is backed by a para-virtualised nested
// hypervisor (no `vmx`/`svm` CPU flag), so KVM is chosen only when /dev/kvm can be opened for
// reading and writing AND the CPU flags show hardware virtualisation, or when the user forces it.
// choose_accel() is pure; probe_host_virt() reads /proc/cpuinfo and /dev/kvm.
#pragma once

#include <string>

namespace lockroom::vm {

enum class Accel { kKvm, kTcg };
enum class AccelPreference { kAuto, kKvm, kTcg };

struct HostVirt {
  bool kvm_device = false;    // /dev/kvm exists
  bool kvm_openable = false;  // and can be opened read-write by this user
  bool cpu_virt_flag = false;  // /proc/cpuinfo lists vmx or svm
  std::string kvm_error;       // why /dev/kvm could not be opened, if it could not
};

struct AccelChoice {
  Accel accel;
  std::string reason;  // one sentence a user can act on
};

AccelChoice choose_accel(const HostVirt& host, AccelPreference preference);
// True when a /proc/cpuinfo text lists vmx or svm among the flags.
bool cpuinfo_has_virt_flag(const std::string& cpuinfo);
HostVirt probe_host_virt();
const char* accel_name(Accel accel);

}  // namespace lockroom::vm
