// Taking a snapshot of a workspace into lockroom's private store: the entry point of this library.
// The caller (the sandbox manager, on a worker thread: everything here blocks on the file system)
// passes the workspace directory and the store directory for it, typically
// <cache>/workspaces/<workspace_store_key(real path)>/store.git.
//
// take_snapshot() selects the files (workspace_scan.h), withholds secrets (secret_policy.h),
// enforces the size limits (snapshot_limits.h), writes blobs, trees and one commit into the store
// and pins the commit with refs/lockroom/snapshots/<id>. Nothing of the user's is written: not
// the working tree, not .git (index, refs, config).
//
// The commit has no parent, author and committer "lockroom <lockroom@localhost>" and a fixed time
// (0, UTC), so the same files always give the same commit id: a guest that already has it needs
// nothing. The snapshot time is in the result's timings, not in the commit.
// File contents are taken byte for byte (no clean/smudge, CRLF or LFS filters).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/common/result.h"
#include "server/workspace/snapshot/secret_policy.h"
#include "server/workspace/snapshot/snapshot_limits.h"
#include "server/workspace/snapshot/workspace_scan.h"

namespace lockroom::workspace::snapshot {

struct SnapshotOptions {
  SecretPolicy secrets;
  SnapshotLimits limits;
  std::string snapshot_id;  // names the pin refs/lockroom/snapshots/<id>; empty: the commit id
};

struct SnapshotTimings {
  std::uint64_t scan_ms = 0;   // walking the tree, ignores, secrets, limits
  std::uint64_t store_ms = 0;  // blobs, trees, commit, ref, stat cache
};

struct SnapshotResult {
  std::string snapshot_id;
  std::string commit_id;                 // hex
  std::string tree_id;                   // hex
  std::optional<std::string> user_head;  // the user's HEAD commit at snapshot time, if any
  std::optional<std::string> branch;     // the user's current branch, if on one
  bool is_git_repo = false;
  std::string repo_prefix;               // the workspace's path inside its repository, "" or "a/b/"
  std::string guest_excludes;            // for the guest's .git/info/exclude (guest_excludes.h)
  std::uint64_t file_count = 0;          // files and symlinks in the snapshot
  std::uint64_t total_bytes = 0;
  std::uint64_t files_read = 0;          // of those, read from disk (the rest came from the stat cache)
  std::vector<std::string> withheld;     // every path kept back as a secret
  std::vector<SkippedEntry> skipped;     // sockets, FIFOs, devices, unreadable entries, names lockroom
                                         // cannot take back from a guest: each with the reason
  SnapshotTimings timings;

  // Every path the snapshot did not take from the worktree (withheld and skipped): a commit built
  // on the snapshot keeps HEAD's version of these (review/apply_branch.h).
  std::vector<std::string> kept_out() const {
    std::vector<std::string> out = withheld;
    for (const auto& s : skipped) out.push_back(s.path);
    return out;
  }
};

// Errors: kNotFound (workspace missing), kInvalidInput (bad pattern or snapshot id),
// kLimitExceeded (naming the offenders), kUnavailable (unreadable workspace or store).
Result<SnapshotResult> take_snapshot(const std::string& workspace_dir, const std::string& store_dir,
                                     const SnapshotOptions& options = {});

// {"snapshotId", "commit", "tree", "userHead"?, "branch"?, "isGitRepo", "repoPrefix", "fileCount",
//  "totalBytes", "filesRead", "withheld": [path], "skipped": [{"path", "reason"}],
//  "timings": {"scanMs", "storeMs"}}
nlohmann::json to_json(const SnapshotResult& result);

}  // namespace lockroom::workspace::snapshot
