// The guest's /init: a busybox shell script, generated from the module load order.
//
// Pure. What it guarantees to the agent is documented in guest/README.md: proc, sysfs, devtmpfs
// (bounded to 1 MiB), devpts and cgroup2 at /sys/fs/cgroup (when the kernel offers it) mounted;
// /tmp, /run, /var/tmp and /dev/shm (bound from /run/shm) on the root tmpfs, so its size bounds
// every file (the disk limit); the modules loaded in order; every virtio-serial port
// reachable as /dev/virtio-ports/NAME; the loopback interface up; then `exec /sbin/lockroom-agent`.
// Anything that fails prints "lockroom-init: …" on the console and ends init, which ends the VM.
#pragma once

#include <string>
#include <vector>

#include "server/vm/image/module_closure.h"

namespace lockroom::vm::image {

inline constexpr const char* kAgentGuestPath = "sbin/lockroom-agent";
inline constexpr const char* kInitReadyLine = "lockroom-init: starting agent";

// `release` is the kernel's lib/modules folder name; module paths are relative to it.
std::string init_script(const std::string& release, const std::vector<ModuleFile>& modules);

}  // namespace lockroom::vm::image
