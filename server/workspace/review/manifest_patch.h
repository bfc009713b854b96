// Partial manifests: the guest's changes since a manifest the host already holds, applied to it.
//
// A partial manifest lists only the paths that changed since manifest N: each new or changed
// entry, or a removal (mode kModeRemoved). apply_partial_manifest patches the host's last
// accepted view with it, checking every changed entry exactly as validate_manifest checks a full
// one (path rules, modes, ids, sizes) plus what the merge adds: a removal of a path the view does
// not hold, a path that becomes both a file and a folder, and the whole-manifest bounds (entry
// count, total size) of the patched view. manifest_changes says which paths differ between two
// views (for rewriting only those folders of the result tree). Pure: no I/O; worker thread.
#pragma once

#include <string>
#include <vector>

#include "server/common/result.h"
#include "server/workspace/review/manifest.h"

namespace lockroom::workspace::review {

inline constexpr std::uint32_t kModeRemoved = 0;

// The patched view; refusals name the guest's offending records. Fails only for whole-manifest
// bounds (kLimitExceeded) and for records out of order or repeated (kInvalidInput: the channel
// decoder already refuses those, so only a caller's bug or a lying guest reaches it).
Result<Manifest> apply_partial_manifest(const Manifest& previous, std::vector<ManifestEntry> changes,
                                        const ManifestLimits& limits = {});

// One path whose entry differs between two views: the new entry, or none when it went away.
struct PathChange {
  std::string path;
  const ManifestFile* now = nullptr;  // points into the `now` view given to manifest_changes
};

// The paths whose mode or id differ between `before` and `now` (both sorted), in path order.
std::vector<PathChange> manifest_changes(const Manifest& before, const Manifest& now);

}  // namespace lockroom::workspace::review
