// lockroom's private object store for one workspace: a bare git repository that only lockroom
// writes (e.g. <cache>/workspaces/<key>/store.git). The user's repository is never written; this
// store receives the snapshot's blobs, trees and commit, pins each commit with a ref, and keeps a
// stat cache so unchanged files are not read again. Blocking I/O; called on a worker thread.
// Two snapshots of one workspace may run at once: objects are written atomically, and a stat cache
// that cannot be locked is simply not saved that time.
#pragma once

#include <sys/stat.h>

#include <optional>
#include <string>
#include <string_view>

#include "server/common/result.h"
#include "server/workspace/git_util.h"
#include "server/workspace/snapshot/workspace_scan.h"

namespace lockroom::workspace::snapshot {

// A directory name for a workspace's store: "<last path component, sanitised>-<16 hex digits of
// the SHA-1 of the real path>", e.g. "my-app-3f2a9c0d11e4b7a2". Stable for one path, distinct for
// two paths with the same last component.
std::string workspace_store_key(std::string_view workspace_real_path);

// Opens the store at `store_dir`, creating a bare repository there (and missing parents) first if
// there is none.
Result<RepoPtr> open_store(const std::string& store_dir);

// "refs/lockroom/snapshots/<id>"; kInvalidInput unless `id` is 1-64 characters of [A-Za-z0-9._-]
// not starting with '.' or '-'.
Result<std::string> snapshot_ref_name(std::string_view id);

// Deletes the pin of snapshot `id` (its objects go when git prunes the store). Missing is fine.
Result<void> release_snapshot(git_repository* store, std::string_view id);

struct StoredBlob {
  git_oid id{};
  struct stat stat {};  // what the file was when it was read (fstat of the open file)
};

// Copies one selected entry into the store as a blob: the link target for a symlink, the content
// for a file (read in 64 KiB pieces and streamed to the object database when it is large, so a big
// file is never held in memory). `path` is absolute. A file that shrinks while it is read is read
// again; one that grows is taken up to the size it had when opened. kNotFound if it disappeared
// since the scan; kLimitExceeded if it has grown past `max_bytes` since the scan.
Result<StoredBlob> store_entry(git_odb* odb, const std::string& path, EntryKind kind, std::uint64_t max_bytes);

}  // namespace lockroom::workspace::snapshot
