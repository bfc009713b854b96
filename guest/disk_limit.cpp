// The disk limit as the size of the root tmpfs; see disk_limit.h.
#include "guest/disk_limit.h"

#include <sys/mount.h>
#include <sys/vfs.h>

#include <cerrno>
#include <cstring>

#include "guest/log.h"
#include "protocol/channel/messages.h"

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

namespace lockroom::agent {

namespace {

std::string mib_text(std::uint64_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB"; }

}  // namespace

std::string tmpfs_size_option(std::uint64_t base_bytes, std::int64_t max_mib) {
  std::uint64_t bytes = base_bytes + (static_cast<std::uint64_t>(max_mib) << 20);
  std::uint64_t pages = (bytes + 4095) / 4096;
  return "size=" + std::to_string(pages * 4) + "k";
}

void DiskLimit::init(const std::string& root, bool enforce) {
  root_ = root;
  struct statfs fs{};
  if (!enforce || ::statfs(root.c_str(), &fs) != 0) return;
  if (fs.f_type != TMPFS_MAGIC) {
    log_warn("the disk limit is not enforced: " + root + " is not a tmpfs");
    return;
  }
  tmpfs_ = true;
  base_ = static_cast<std::uint64_t>(fs.f_blocks - fs.f_bfree) * static_cast<std::uint64_t>(fs.f_bsize);
  log_info("the disk limit sizes the tmpfs at " + root + " (the image takes " + mib_text(base_) + ")");
}

std::optional<DiskUsage> DiskLimit::usage() const {
  struct statfs fs{};
  if (root_.empty() || ::statfs(root_.c_str(), &fs) != 0) return std::nullopt;
  auto block = static_cast<std::uint64_t>(fs.f_bsize);
  DiskUsage u;
  u.size = static_cast<std::uint64_t>(fs.f_blocks) * block;
  u.used = static_cast<std::uint64_t>(fs.f_blocks - fs.f_bfree) * block;
  u.available = static_cast<std::uint64_t>(fs.f_bavail) * block;
  return u;
}

std::optional<RpcError> DiskLimit::set(std::int64_t max_mib) {
  if (!tmpfs_) {
    max_mib_ = max_mib;  // reported, not enforced
    return std::nullopt;
  }
  std::string option = tmpfs_size_option(base_, max_mib);
  if (::mount(nullptr, root_.c_str(), nullptr, MS_REMOUNT, option.c_str()) != 0) {
    int err = errno;
    if (err == EINVAL) {
      auto u = usage();
      std::uint64_t files = u && u->used > base_ ? u->used - base_ : 0;
      return make_rpc_error(protocol::channel::agent_error::kLimitReached,
                            "limits.set: maxDiskMiB = " + std::to_string(max_mib) + " is less than the " + mib_text(files) +
                                " of files already in the guest; delete some or ask for more",
                            json{{"errno", "EINVAL"}});
    }
    return errno_error(err, "limits.set: resizing the tmpfs at " + root_ + " (" + option + ")");
  }
  max_mib_ = max_mib;
  log_info("disk limit: " + std::to_string(max_mib) + " MiB for files (" + option + " on " + root_ + ")");
  return std::nullopt;
}

}  // namespace lockroom::agent
