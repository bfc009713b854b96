// A refused entry keeps the snapshot's version of its path.
//
// When lockroom refuses one of the guest's manifest entries (a file over the size limit, a
// device mode, a bad id, a path that is both a file and a folder), the review must not read
// that as the guest deleting the file: applying "everything" would then delete it on the host.
// keep_base_versions puts the base tree's entry back at each refused path (Manifest::
// refused_paths) that the base holds as a file or symlink, so the refused path shows no change
// at all and only the refusal, with its reason, is reported. Blocking libgit2 reads: worker
// thread, one store per thread at a time.
#pragma once

#include <git2.h>

#include <cstddef>

#include "server/common/result.h"
#include "server/workspace/review/manifest.h"

namespace lockroom::workspace::review {

// Adds to `manifest.files` (kept sorted) the base version of each refused path the base tree
// holds as a file, executable or symlink, unless that would clash with an accepted entry (a
// file where the manifest has a folder, or the reverse). Returns how many were put back.
Result<std::size_t> keep_base_versions(git_repository* store, const git_oid& base_tree, Manifest& manifest);

}  // namespace lockroom::workspace::review
