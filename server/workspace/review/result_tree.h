// The result tree rewritten only where the guest's files changed.
//
// update_result_tree starts from the previous result tree and replaces only the folders on the
// changed paths (libgit2's tree updater), so every unchanged folder keeps its tree id and the
// diff against the base skips it without reading it. Each changed blob is checked as
// build_result_tree checks every blob (present, a blob, the size the manifest claims). Blocking
// libgit2 I/O: worker thread, one store per thread at a time.
#pragma once

#include <git2.h>

#include <vector>

#include "server/common/result.h"
#include "server/workspace/review/manifest_patch.h"

namespace lockroom::workspace::review {

// The id of `previous` with `changes` applied (from manifest_changes()).
Result<git_oid> update_result_tree(git_repository* store, const git_oid& previous, const std::vector<PathChange>& changes);

}  // namespace lockroom::workspace::review
