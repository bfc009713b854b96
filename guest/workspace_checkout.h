// workspace.checkout: puts a commit whose objects are in the workspace's store into the worktree.
//
// One `git cat-file --batch-check` first resolves both commits, HEAD and the branch. First
// checkout (no base): one `git checkout -B BRANCH COMMIT` fills the empty index and worktree, sets
// the branch and points HEAD at it (an untracked file in the way, ignored or not, is refused,
// never overwritten). Sync (base given): the index is refreshed, then `git read-tree -m -u BASE
// COMMIT` carries the agent's local edits forward and refuses, changing nothing, when one of them
// touches a path that changed from BASE to COMMIT; the refusal lists every such path (data.files).
// A path where the guest already holds exactly COMMIT's version (the user applied the sandbox's
// own change on the host) is no conflict: it is taken into the index and read-tree runs again.
// The branch moves from BASE to COMMIT unless the agent moved it itself. The file count comes from
// the index header. Blocking; loop thread only.
#pragma once

#include <string>
#include <vector>

#include "guest/errors.h"
#include "protocol/channel/messages.h"

namespace lockroom::agent {

Outcome checkout_workspace(const protocol::channel::WorkspaceCheckoutParams& params);

// Paths of `local` that collide with `changed`: equal, or one a folder of the other. Sorted.
std::vector<std::string> colliding_paths(const std::vector<std::string>& changed, const std::vector<std::string>& local);

}  // namespace lockroom::agent
