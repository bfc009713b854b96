// Manifests from the watcher's changes (protocol/channel.md, "Changes out").
//
// update_manifest re-examines only the files the workspace watch saw written, created, deleted or
// renamed since the previous manifest, when nothing else happened (no folder created, removed or
// renamed, no ignore input or git index touched): every other entry is as it was, and of the
// files come only git's ignore rules decide whether they are listed. It answers only what changed
// (Manifest::changes_only); ManifestHistory applies that to the previous manifest. Blocking
// (lstat, hashing, one git run when files came); loop thread only.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "guest/workspace_manifest.h"

namespace lockroom::agent {

// What the workspace watch saw since the previous manifest, when only files were written, come
// or gone, and how to ask git whether come files are ignored (workspace_ignore.h).
struct WatchedNames {
  const std::set<std::string>& dirty;    // written
  const std::set<std::string>& touched;  // created, deleted or renamed
  std::function<Result<std::set<std::string>>(const std::vector<std::string>&)> ignored;
};

// `previous`: sorted, the latest manifest. The answer's entries are the changes to it: each
// written or gone path re-described where it differs, a removal record for one no longer a file
// or symlink, and each file come since that git would list (sorted by path). Its bytes and counts
// are the whole manifest's. `capture` and `earlier` as for build_manifest. Sets `*relist` (and
// answers nothing) when only a whole listing can tell: a file come inside a nested repository, or
// git not answering which come files it ignores.
std::variant<Manifest, RpcError> update_manifest(const std::string& root, const protocol::channel::WorkspaceBounds& bounds, StatCache& cache,
                                                 const std::vector<protocol::channel::ManifestEntry>& previous, const WatchedNames& names,
                                                 const std::optional<protocol::channel::InlineBounds>& capture, EarlierHashes* earlier, bool* relist);

}  // namespace lockroom::agent
