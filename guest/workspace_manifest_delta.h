// Manifests from the watcher's changes, and partial manifests (protocol/channel.md, "Changes out").
//
// update_manifest re-examines only the files the workspace watch saw written since the previous
// manifest, when nothing structural happened (no entry created, removed or renamed, no ignore
// input or git index touched): the paths listed are then the previous manifest's, and every other
// entry is as it was. manifest_delta gives the records of a partial manifest: the entries of
// `now` that are new or differ from `before`, and a removal record (mode 0) for each path gone.
// Blocking (lstat, hashing); loop thread only.
#pragma once

#include <set>
#include <string>
#include <variant>
#include <vector>

#include "guest/workspace_manifest.h"

namespace lockroom::agent {

// `capture`: keep the bytes of the files read again, within these bounds (Manifest::captured).
std::variant<Manifest, RpcError> update_manifest(const std::string& root, const protocol::channel::WorkspaceBounds& bounds, StatCache& cache,
                                                 const std::vector<protocol::channel::ManifestEntry>& previous, const std::set<std::string>& dirty,
                                                 const std::optional<protocol::channel::InlineBounds>& capture = std::nullopt);

// Both sorted by path. Removal records have mode 0, a zero id and size 0.
std::vector<protocol::channel::ManifestEntry> manifest_delta(const std::vector<protocol::channel::ManifestEntry>& before,
                                                             const std::vector<protocol::channel::ManifestEntry>& now);

}  // namespace lockroom::agent
