// changes/apply in branch mode: commits the accepted changes to refs/heads/lockroom/<name> in
// the user's repository, without touching their HEAD, index or worktree.
//
// The base tree is a snapshot of the user's worktree, which may differ from their HEAD commit
// (uncommitted edits, untracked files). Committing the result tree itself on top of HEAD would
// smuggle those edits into the branch, so the branch's tree is a three-way tree merge:
// ancestor = base (snapshot), ours = HEAD's tree (at snapshot time), theirs = the selected result.
// When HEAD's tree equals the base no merge is needed. Conflicts are reported by path and no
// branch is created. Only the objects the user's repository lacks are copied into it (HEAD's
// tree objects are first copied into lockroom's store, where the merge runs).
// With an unborn HEAD (a repository without commits) the branch's first commit holds the
// selected result tree as is. Blocking I/O: call from a worker thread.
#pragma once

#include <git2.h>

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
};

struct BranchOutcome {
  bool created = false;
  std::string ref_name;                   // refs/heads/lockroom/<name>
  git_oid commit{};
  git_oid tree{};
  std::vector<std::string> conflicts;     // paths the tree merge could not resolve (then nothing is created)
  std::vector<SelectionRefusal> refused;  // selection entries that were not applied
};

Result<BranchOutcome> apply_branch(git_repository* store, const git_oid& base_tree, const git_oid& result_tree,
                                   const Selection& selection, const BranchRequest& request);

}  // namespace lockroom::workspace::review
