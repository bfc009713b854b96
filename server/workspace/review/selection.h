// What the user accepted: all changes, or some files, optionally only some hunks of a file.
//
// resolve_selection turns a Selection into planned changes, each with the base entry (what the
// snapshot had) and the target entry (what the file should become). For a subset of hunks the
// target is base + those hunks, written as a new blob into lockroom's store. Selections that
// name no change, unknown hunks, or hunks of a file that has none (binary, symlink, deletion)
// are refused per file, and so is any change whose path lockroom would never write (see
// path_problem), whatever the selection. Shared by apply_worktree and apply_branch; blocking
// libgit2 I/O.
#pragma once

#include <git2.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/common/result.h"
#include "server/workspace/review/changes.h"

namespace lockroom::workspace::review {

struct FileSelection {
  std::string path;                                // the change's path (or its old path)
  std::optional<std::vector<std::string>> hunks;   // hunk ids; absent: the whole file
};

struct Selection {
  bool everything = true;
  std::vector<FileSelection> files;  // used when !everything

  static Selection all() { return {}; }
  static Selection only(std::vector<FileSelection> files) { return Selection{false, std::move(files)}; }
};

struct TreeSide {
  std::uint32_t mode = 0;
  git_oid blob{};
};

struct PlannedChange {
  FileChange change;
  std::optional<TreeSide> base;    // at change.old_path; absent for additions
  std::optional<TreeSide> target;  // at change.path; absent for deletions
  bool partial = false;            // target is base + a subset of the hunks
};

struct SelectionRefusal {
  std::string path;
  std::string reason;
};

struct ResolvedSelection {
  std::vector<PlannedChange> changes;  // in path order
  std::vector<SelectionRefusal> refused;
};

Result<ResolvedSelection> resolve_selection(const Changes& changes, const Selection& selection);

}  // namespace lockroom::workspace::review
