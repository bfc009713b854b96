// changes/apply in branch mode: commits the accepted changes to refs/heads/lockroom/<name> in
// the user's repository, without touching their HEAD, index or worktree.
//
// The base tree is a snapshot of the user's worktree, which may differ from their HEAD commit
// (uncommitted edits, untracked files). The branch never conflicts and loses nothing: when the
// snapshot differs from HEAD, its first commit (parent: HEAD at snapshot time) holds the workspace
// as snapshotted, and the sandbox's commit follows it, so `git show` of the tip is exactly the
// sandbox's work and the user's own edits are one commit below. Paths the snapshot kept out
// (withheld secrets, skipped entries) and HEAD's submodules (gitlinks; the snapshot holds their
// checked-out files) keep HEAD's version in both commits. Only the objects the user's repository
// lacks are copied into it. With an unborn HEAD the sandbox's commit is the branch's only one and
// holds the selected result tree as is. Blocking I/O: call from a worker thread.
#pragma once

#include <git2.h>

#include <optional>
#include <string>
#include <vector>

#include "server/common/result.h"
#include "server/workspace/review/selection.h"

namespace lockroom::workspace::review {

struct BranchRequest {
  std::string repo_path;       // the user's repository (worktree or .git directory)
  git_oid head_at_snapshot{};  // the user's HEAD commit when the snapshot was taken; zero = unborn
  std::string name;            // the branch is lockroom/<name>
  bool force = false;          // replace an existing lockroom/<name>
  std::string message = "Changes from a lockroom sandbox\n";
  std::vector<std::string> kept_out;  // paths the snapshot withheld or skipped: HEAD's version stays
  std::string snapshot_message = "The workspace as lockroom snapshotted it (uncommitted and untracked files)\n";
};

struct BranchOutcome {
  bool created = false;
  std::string ref_name;                   // refs/heads/lockroom/<name>
  git_oid commit{};                       // the sandbox's commit: the branch's tip
  git_oid tree{};
  std::optional<git_oid> snapshot_commit;  // the workspace as snapshotted, when it differed from HEAD
  std::vector<std::string> conflicts;     // always empty: kept for the protocol's answer
  std::vector<SelectionRefusal> refused;  // selection entries that were not applied
};

Result<BranchOutcome> apply_branch(git_repository* store, const git_oid& base_tree, const git_oid& result_tree,
                                   const Selection& selection, const BranchRequest& request);

}  // namespace lockroom::workspace::review
