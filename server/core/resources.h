// Sandbox resources and limits: what a caller may ask for, the defaults, and validation.
//
// resolve_resources() is pure, in the manner of Firecracker's machine_config: it takes what the
// caller asked for and what the host has, and returns either the limits in force or an error
// whose text is the message the user sees (the field, the value, the bound, what to do).
#pragma once

#include <cstdint>
#include <optional>

#include "server/common/result.h"

namespace lockroom::core {

struct Resources {
  int cpus = 1;
  int memory_mib = 512;
  int disk_mib = 1024;              // scratch space inside the guest
  int lifetime_seconds = 3600;      // wall clock, from create to forced destroy
  int max_processes = 512;          // processes alive at once inside the guest
  std::uint64_t max_output_bytes = 256ull << 20;  // per process, stdout + stderr

  bool operator==(const Resources&) const = default;
};

// Every field optional: absent means the default.
struct ResourceRequest {
  std::optional<std::int64_t> cpus;
  std::optional<std::int64_t> memory_mib;
  std::optional<std::int64_t> disk_mib;
  std::optional<std::int64_t> lifetime_seconds;
  std::optional<std::int64_t> max_processes;
  std::optional<std::int64_t> max_output_bytes;
};

struct HostCapacity {
  int cpus = 1;
  std::uint64_t memory_mib = 1024;
};

// Bounds that hold on any host.
inline constexpr int kMinMemoryMib = 128;
inline constexpr int kMaxDiskMib = 256 * 1024;
inline constexpr int kMaxLifetimeSeconds = 7 * 24 * 3600;
inline constexpr int kMaxProcesses = 65536;

Result<Resources> resolve_resources(const ResourceRequest& request, const HostCapacity& host);
HostCapacity probe_host_capacity();

}  // namespace lockroom::core
