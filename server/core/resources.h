// Sandbox resources and limits: what a caller may ask for, the defaults, and validation.
//
// resolve_resources() is pure, in the manner of Firecracker's machine_config: it takes what the
// caller asked for and what the host has, and returns either the limits in force or an error
// whose text is the message the user sees (the field, the value, the bound, what to do).
// The guest's files live in its RAM (a tmpfs sized to diskMiB, guest/disk_limit.h), so diskMiB
// is bounded by memoryMiB: at most memoryMiB - kGuestMemoryOverheadMib, by default half of it.
// limits_params() is what the guest agent is told after each restore (limits.set).
#pragma once

#include <cstdint>
#include <optional>

#include "server/common/result.h"

namespace lockroom::protocol::channel {
struct LimitsParams;
}

namespace lockroom::core {

struct Resources {
  int cpus = 1;
  int memory_mib = 512;
  int disk_mib = 256;               // room for files inside the guest (in its RAM: see above)
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
inline constexpr int kMinDiskMib = 16;
// What a guest needs of its RAM besides its files: kernel, the image's own files, the agent,
// and a little room for processes. diskMiB may take the rest.
inline constexpr int kGuestMemoryOverheadMib = 96;

Result<Resources> resolve_resources(const ResourceRequest& request, const HostCapacity& host);
HostCapacity probe_host_capacity();

// The limits the guest agent enforces itself: process count and room for files.
protocol::channel::LimitsParams limits_params(const Resources& resources);

}  // namespace lockroom::core
