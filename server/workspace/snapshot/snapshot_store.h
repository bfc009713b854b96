// lockroom's private object store for one workspace: a bare git repository that only lockroom
// writes (e.g. <cache>/workspaces/<key>/store.git). The user's repository is never written; this
// store receives the snapshot's objects (object_writer.h), pins each commit with a ref, and keeps
// a stat cache (stat_cache.h). Blocking I/O; called on a worker thread. Two snapshots of one
// workspace may run at once: objects and packs are written atomically, and a stat cache that
// cannot be locked is simply not saved that time.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "server/common/result.h"
#include "server/workspace/git_util.h"

namespace lockroom::workspace::snapshot {

// A directory name for a workspace's store: "<last path component, sanitised>-<16 hex digits of
// the SHA-1 of the real path>", e.g. "my-app-3f2a9c0d11e4b7a2". Stable for one path, distinct for
// two paths with the same last component.
std::string workspace_store_key(std::string_view workspace_real_path);

// Opens the store at `store_dir`, creating a bare repository there (and missing parents) first if
// there is none. The store is then held in use by this process (store_use.h): no prune removes it
// while this process runs.
Result<RepoPtr> open_store(const std::string& store_dir);

// "refs/lockroom/snapshots/<id>"; kInvalidInput unless `id` is 1-64 characters of [A-Za-z0-9._-]
// not starting with '.' or '-'.
Result<std::string> snapshot_ref_name(std::string_view id);

// Deletes the pin of snapshot `id` (its objects go when git prunes the store). Missing is fine.
Result<void> release_snapshot(git_repository* store, std::string_view id);

}  // namespace lockroom::workspace::snapshot
