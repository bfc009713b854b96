// The review's base tree and how it moves: the tree every later review diffs against.
//
// It starts as the snapshot's tree. A worktree apply moves it per file: each file applied, merged
// or found already there on the host takes the sandbox's side (a deletion removes it, a rename
// removes the old path), so the next review shows only what is still to decide. A discard puts
// the discarded paths back to the snapshot's version; a sync replaces the whole base with the new
// snapshot. base_differs tells which changes of an older view sit on a base that has moved since
// (their review is out of date). Blocking libgit2 I/O: call from a worker thread.
#pragma once

#include <git2.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "server/common/result.h"
#include "server/workspace/review/apply_worktree.h"
#include "server/workspace/review/changes.h"

namespace lockroom::workspace::review {

struct BaseUpdate {
  std::string path;
  std::optional<TreeSide> side;  // none: the path goes from the base
};

struct MovedBase {
  git_oid tree{};
  std::vector<git_oid> written;  // the blobs and trees along the updated paths (to keep them alive)
};

// `base_tree` with `updates` made; updates of paths the tree does not have are skipped when they
// remove, added when they set.
Result<MovedBase> update_base(git_repository* store, const git_oid& base_tree, const std::vector<BaseUpdate>& updates);

// The updates a worktree apply makes to the base: one per file applied, merged or unchanged
// (the host has the sandbox's version), none for conflicts and refusals.
std::vector<BaseUpdate> updates_after_apply(const std::vector<FileApplyResult>& applied);

// The updates that put `paths` back to what `snapshot_tree` has there.
Result<std::vector<BaseUpdate>> updates_back_to(git_repository* store, const git_oid& snapshot_tree, const std::set<std::string>& paths);

// The paths of `changes` (by their new path) whose entry at path or old path differs between the
// view's base tree and the current base tree.
Result<std::set<std::string>> base_differs(git_repository* store, const git_oid& view_base, const git_oid& current_base,
                                           const std::vector<FileChange>& changes);

}  // namespace lockroom::workspace::review
