// The host's TSC rate, measured. Under TCG the guest's TSC is the host's, and a guest kernel
// that must calibrate it against an emulated PIT on a busy host can stall at boot; handing it
// `tsc_early_khz=` skips that. Blocks ~20 ms; call once per process (the result is cached).
#pragma once

#include <optional>

namespace lockroom::vm {

// Empty on hosts that are not x86-64 or when the measurement is implausible.
std::optional<long> host_tsc_khz();

}  // namespace lockroom::vm
