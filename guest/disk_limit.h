// DiskLimit: the room the guest's files may take, enforced as the size of one tmpfs.
//
// In a guest the initramfs is unpacked into the kernel's rootfs, which is a tmpfs, and /init
// keeps every writable place on it (/tmp, /run, /root, /home, /var, /workspace, and /dev/shm
// bound from /run/shm; devtmpfs is capped at 1 MiB), so the size of "/" bounds everything a
// program can write. At start the agent notes what the image itself takes (`base`); limits.set's
// maxDiskMiB resizes "/" to base + maxDiskMiB with a remount (tmpfs resizes while in use; below
// what is already used the kernel refuses, and so does limits.set). tmpfs lives in the guest's
// RAM, which is why the host caps diskMiB below memoryMiB. Anywhere else (the agent on a host,
// a root that is not a tmpfs) nothing is enforced: enforcement() is "none".
// Loop thread only; the helpers at the end are pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "guest/errors.h"

namespace lockroom::agent {

struct DiskUsage {
  std::uint64_t size = 0;       // bytes the filesystem may hold
  std::uint64_t used = 0;       // bytes in use (the image's own included)
  std::uint64_t available = 0;  // bytes a write may still take
};

class DiskLimit {
 public:
  // `root` is the filesystem to bound; `enforce` says whether this agent may resize it (PID 1).
  void init(const std::string& root, bool enforce);
  bool enforced() const { return tmpfs_; }
  const char* enforcement() const { return tmpfs_ ? "tmpfs" : "none"; }
  std::optional<std::int64_t> max_mib() const { return max_mib_; }
  // Resizes the root to base + max_mib. An error names the sizes when the files already there
  // do not fit, or the mount call's reason.
  std::optional<RpcError> set(std::int64_t max_mib);
  std::optional<DiskUsage> usage() const;
  std::uint64_t base_bytes() const { return base_; }

 private:
  std::string root_;
  bool tmpfs_ = false;
  std::uint64_t base_ = 0;
  std::optional<std::int64_t> max_mib_;
};

// The tmpfs mount option for a limit of `max_mib` on top of `base_bytes`: "size=<KiB>k",
// rounded up to whole 4 KiB pages.
std::string tmpfs_size_option(std::uint64_t base_bytes, std::int64_t max_mib);
// Whether the filesystem counts as full: less than kDiskFullBelow bytes left for writes.
inline constexpr std::uint64_t kDiskFullBelow = 64 * 1024;
inline bool disk_full(const DiskUsage& usage) { return usage.size > 0 && usage.available < kDiskFullBelow; }

}  // namespace lockroom::agent
