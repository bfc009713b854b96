// A sync (workspace.checkout with a base) done by the agent itself, without starting git: under
// TCG every git process costs ~200 ms before it does anything, and a sync used to run five.
//
// fast_sync() reads both commits' trees from the workspace's object store (workspace_objects.h),
// finds the paths that changed from BASE to COMMIT, and updates those paths in the worktree and
// in git's index (.git/index, rewritten under git's own index.lock) exactly as `git read-tree -m
// -u BASE COMMIT` would when nothing is in the way, then moves the branch under its ref lock when
// it still points at BASE (or does not exist). It only acts when every changed path is clean:
// its index entry is BASE's version and the file on disk is what the index says (or already
// COMMIT's version, the user having applied the sandbox's own change); no path is a submodule
// or turns from a file into a folder; the index is one git writes plainly (version 2 or 3, no
// split, no extended or unmerged entries, no required extension); HEAD and the branch are plain
// files. Anything else returns nullopt before touching anything, and the caller runs git as
// before (which reports conflicts with their paths). Blocking; loop thread only.
#pragma once

#include <optional>
#include <string>

#include "guest/errors.h"
#include "guest/workspace_hash.h"
#include "protocol/channel/messages.h"

namespace lockroom::agent {

struct FastSyncStats {
  std::size_t changed = 0;  // paths that differ between BASE and COMMIT
  std::size_t written = 0;  // files written or removed in the worktree
  std::int64_t ms = 0;
};

// nullopt: not done, nothing changed; run git. Otherwise the checkout's outcome. `cache` learns
// the ids of the files written.
std::optional<Outcome> fast_sync(const protocol::channel::WorkspaceCheckoutParams& params, StatCache& cache,
                                 FastSyncStats* stats = nullptr);

// How many paths a fast sync handles at most; a bigger change goes to git.
inline constexpr std::size_t kMaxFastSyncPaths = 4096;

}  // namespace lockroom::agent
