// workspace.checkout: puts a commit whose objects are in the workspace's store into the worktree.
//
// First checkout (no base): `git read-tree -m -u COMMIT` into the empty index (an untracked file
// in the way is refused, never overwritten), then the branch is set to COMMIT and HEAD points at
// it. Sync (base given): the index is refreshed, then `git read-tree -m -u BASE COMMIT` carries
// the agent's local edits forward and refuses, changing nothing, when one of them touches a path
// that changed from BASE to COMMIT; the refusal lists every such path (data.files). The branch
// moves from BASE to COMMIT unless the agent moved it itself. Blocking; loop thread only.
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
