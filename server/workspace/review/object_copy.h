// Copying a tree and everything it references from one repository's object database to
// another's, skipping what the destination already has. Used by apply_branch in both
// directions (the user's HEAD tree into lockroom's store; the branch's tree into the user's repo).
// A tree is written only after all its entries, so a tree present in the destination is taken
// to be complete and is not descended into. Submodule entries (gitlinks) are not followed.
#pragma once

#include <git2.h>

#include <cstddef>

#include "server/common/result.h"

namespace lockroom::workspace::review {

// Returns the number of objects copied.
Result<std::size_t> copy_tree_objects(git_repository* from, git_repository* to, const git_oid& tree);

}  // namespace lockroom::workspace::review
