// Saving a booted guest's device state and restoring new guests from it (fast start).
//
// The template guest runs with its RAM in a shared file (RamMode::kTemplate). save_snapshot()
// turns on QEMU's `x-ignore-shared` migration capability (the RAM file is not copied; restores
// map it copy-on-write), stops the guest, and migrates to a unix socket that lockroom listens on
// and copies into `state_file` (QEMU's `-sandbox spawn=deny` forbids `exec:` URIs). Tens of KB.
//
// restore_readiness() is a ReadinessCheck for a Vm started with RamMode::kRestore (`-incoming
// defer`): it enables the same capability, `migrate-incoming` on a unix socket in the VM's state
// dir, writes the state file into it, waits until QEMU leaves `inmigrate` (`paused`), sends
// `cont`, then runs `then` (the guest's own readiness, e.g. an agent health check). Loop thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>

#include "server/common/result.h"
#include "server/vm/vm.h"

namespace lockroom::vm {

struct SnapshotInfo {
  std::uint64_t state_bytes = 0;
  std::chrono::milliseconds took{0};
};

void save_snapshot(Vm& vm, const std::filesystem::path& state_file, std::chrono::milliseconds timeout,
                   std::function<void(Result<SnapshotInfo>)> done);

ReadinessCheck restore_readiness(std::filesystem::path state_file, ReadinessCheck then);

}  // namespace lockroom::vm
