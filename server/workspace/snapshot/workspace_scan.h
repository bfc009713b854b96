// Selection: which files of a workspace go into a snapshot, the way `git add -A` would see the
// working tree, without writing anything of the user's. Called by take_snapshot() on a worker
// thread; blocking file-system I/O.
//
// The scanner walks the directory itself (openat, never following a symlink) and asks libgit2
// only read-only questions: the user's index (is this path tracked?) and the ignore rules
// (.gitignore at every level, .git/info/exclude, core.excludesFile). It never refreshes or writes
// the index and never runs `status`. Rules:
//   - tracked files are taken as they are in the working tree; a deleted tracked file is absent;
//   - untracked files are taken unless ignored; an ignored directory without tracked files in it
//     is not entered;
//   - a directory holding `.git` (a submodule or any nested repository) is walked as its own
//     repository with its own ignores, and its files are taken as ordinary files;
//   - a workspace that is not in a git repository is walked with the same ignore machinery
//     (its .gitignore files and the user's global excludes) through lockroom's store repository;
//   - `.git` entries, empty directories and the store itself (if it sits in the workspace) are
//     never taken; symlinks are taken as symlinks and never followed; sockets, FIFOs and devices
//     are listed as skipped with the reason;
//   - a file or folder whose name lockroom would refuse when the guest lists it back
//     (review::path_problem: control characters, bytes that are not UTF-8, ".git" in another
//     spelling, an overlong path) is listed as skipped with the reason, under its printable()
//     form, and not taken: otherwise every review would show it deleted and refused;
//   - files matching the secret filter are withheld and listed.
// A workspace inside a larger repository is taken from its own directory down, with the
// repository's rules; `git.prefix` says where it sits.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/common/result.h"
#include "server/workspace/snapshot/secret_policy.h"

namespace lockroom::workspace::snapshot {

enum class EntryKind { kFile, kExecutable, kSymlink };

struct ScannedEntry {
  std::string path;  // workspace-relative, '/'-separated
  EntryKind kind = EntryKind::kFile;
  std::uint64_t size = 0;  // bytes; for a symlink the length of its target
  struct stat stat {};     // lstat() as seen by the scan
};

struct SkippedEntry {
  std::string path;  // as is; review::printable() form (\xNN escapes) when the name is the reason
  std::string reason;
};

struct WorkspaceGitInfo {
  bool is_git_repo = false;
  std::optional<std::string> head_commit;  // hex id of HEAD's commit; none when unborn or not a repo
  std::optional<std::string> branch;       // "main" for refs/heads/main; none when detached
  std::string prefix;                      // the workspace's path inside the repository ("" at the root, else "a/b/")
  std::string guest_excludes;              // the ignore rules the guest needs besides the snapshot's (guest_excludes.h)
};

struct ScanResult {
  std::vector<ScannedEntry> entries;  // sorted by path
  std::vector<std::string> withheld;  // sorted
  std::vector<SkippedEntry> skipped;  // sorted by path
  WorkspaceGitInfo git;
  bool stopped_early = false;  // more than `max_entries` files: the walk stopped there
};

// `workspace` must be an absolute, symlink-free path to a directory (realpath()). `store_dir` is
// lockroom's bare store for this workspace; it supplies the ignore machinery when the workspace
// is not a git repository, and is never taken into the snapshot. The walk stops once more than
// `max_entries` files are selected (the caller's file-count limit is then broken anyway).
Result<ScanResult> scan_workspace(const std::string& workspace, const std::string& store_dir,
                                  const SecretFilter& secrets, std::uint64_t max_entries);

}  // namespace lockroom::workspace::snapshot
