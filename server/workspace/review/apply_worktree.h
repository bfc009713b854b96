// changes/apply in worktree mode: writes the accepted changes into the user's workspace.
//
// Per file: if the host file is still what the snapshot had, it becomes what the sandbox made
// (or base + the selected hunks); if the user changed it meanwhile, a three-way merge
// (ancestor = snapshot, ours = host now, theirs = sandbox) is written when clean and reported
// as a conflict, with the conflict text, when not, leaving the file untouched. Everything is
// planned (read, compared, merged) before the first write, each write is atomic (temp file,
// fsync, rename), and a file whose host state changes during the apply is not touched.
// A caller may still stop it between planning and the first write (options.stop_before_writing).
//
// Never: a path outside the workspace, anything under .git, a write through a symlink (any
// component), replacing a directory, device, fifo or socket, a file over the size limit, or a
// symlink whose target is absolute, climbs out of the workspace or into .git (see
// symlink_target_problem; such a symlink stays visible in the review and is refused here).
// Blocking I/O: call from a worker thread.
#pragma once

#include <git2.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "server/common/result.h"
#include "server/workspace/review/selection.h"

namespace lockroom::workspace::review {

enum class ApplyStatus { kApplied, kMerged, kConflict, kRefused, kUnchanged };
const char* apply_status_name(ApplyStatus status);  // "applied", "merged", ...

struct FileApplyResult {
  std::string path;
  std::string old_path;       // differs from path for renames
  ApplyStatus status = ApplyStatus::kUnchanged;
  std::string reason;         // why it was refused, conflicted or left unchanged
  std::string conflict_text;  // for a content conflict: the merge with conflict markers
  // Whether the host now has the sandbox's side of the file (applied, merged or already there):
  // the review's base then takes `target` at `path` (none: a deletion) and drops `old_path`.
  bool moves_base = false;
  std::optional<TreeSide> target;
};

struct WorktreeApplyOptions {
  std::uint64_t max_file_bytes = std::uint64_t(64) << 20;
  // Asked once everything is planned, right before the first write: true stops the apply there
  // (nothing written; the answer is kCancelled). Once writing began the apply finishes.
  std::function<bool()> stop_before_writing;
};

// Fails only when nothing can be done at all (workspace or trees missing); per-file outcomes,
// including selection refusals, are in the returned list (in path order, refusals first).
Result<std::vector<FileApplyResult>> apply_worktree(git_repository* store, const git_oid& base_tree,
                                                    const git_oid& result_tree, const std::string& workspace_dir,
                                                    const Selection& selection,
                                                    const WorktreeApplyOptions& options = {});

}  // namespace lockroom::workspace::review
