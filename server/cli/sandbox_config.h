// The sandbox manager's configuration for this host, shared by `serve` and `run`.
//
// Chooses the accelerator (LOCKROOM_ACCEL=kvm|tcg overrides the automatic choice), finds
// lockroom-agent next to the binary, and sweeps what a dead lockroom left behind in the state
// dir (its QEMU processes and state dirs, nothing else). CLI thread, at start-up.
#pragma once

#include "server/core/sandbox_manager.h"

namespace lockroom::cli {

core::ManagerConfig sandbox_config();

}  // namespace lockroom::cli
