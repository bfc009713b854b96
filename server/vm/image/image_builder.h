// Building the default guest image on first use, and finding it again by content hash.
//
// ensure_image() gathers the inputs (the kernel package from kernel_package.h, the module load
// order from modules.dep, busybox, lockroom-agent and git (guest_git.h) with their shared
// libraries, the guest's gitconfig, the /init script, and the optional tools of guest_tools.h —
// curl, git's https helper — when the host has them; the manifest names those left out),
// hashes all of them with the format version, and returns `<cache>/images/<hash>/` if it exists;
// otherwise it builds the image aside and renames it into place. Steps slower than a moment are
// reported through `progress`. Blocking (seconds on a cache hit for the apt look-up, a minute
// on first use): CLI or worker thread, never the loop.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "server/common/result.h"
#include "server/vm/image/image_store.h"
#include "server/vm/image/progress.h"

namespace lockroom::vm::image {

// The modules the guest channel needs; their dependencies are added from modules.dep.
inline const std::vector<std::string> kDefaultModules = {"virtio_ring", "virtio", "virtio_mmio", "virtio_console"};

struct ImageBuildOptions {
  std::filesystem::path cache;  // lockroom's cache dir (paths.h)
  std::filesystem::path agent;  // lockroom-agent on the host
  std::vector<std::string> modules = kDefaultModules;
  bool force = false;           // ask apt again and rebuild even when an image with the same hash exists
};

Result<GuestImage> ensure_image(const ImageBuildOptions& options, const Progress& progress);

// lockroom-agent next to the running program (/proc/self/exe's folder).
std::filesystem::path default_agent_path();

}  // namespace lockroom::vm::image
