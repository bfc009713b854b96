// Manifests from the watcher's changes (protocol/channel.md, "Changes out").
//
// update_manifest re-examines only the files the workspace watch saw written since the previous
// manifest, when nothing structural happened (no entry created, removed or renamed, no ignore
// input or git index touched): the paths listed are then the previous manifest's, and every other
// entry is as it was. It answers only what changed (Manifest::changes_only); ManifestHistory
// applies that to the previous manifest. Blocking (lstat, hashing); loop thread only.
#pragma once

#include <set>
#include <string>
#include <variant>
#include <vector>

#include "guest/workspace_manifest.h"

namespace lockroom::agent {

// `previous`: sorted, the latest manifest. The answer's entries are the changes to it: each
// dirty path re-described where it differs, a removal record for one no longer a file or
// symlink. Its bytes and counts are the whole manifest's. `capture`: keep the bytes of the files
// read again, within these bounds (Manifest::captured). `earlier`: as for build_manifest.
std::variant<Manifest, RpcError> update_manifest(const std::string& root, const protocol::channel::WorkspaceBounds& bounds, StatCache& cache,
                                                 const std::vector<protocol::channel::ManifestEntry>& previous, const std::set<std::string>& dirty,
                                                 const std::optional<protocol::channel::InlineBounds>& capture = std::nullopt,
                                                 EarlierHashes* earlier = nullptr);

}  // namespace lockroom::agent
