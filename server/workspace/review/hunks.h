// Diff hunks as the review library hands them out, their stable ids, and "base + the selected
// hunks" for partial acceptance. Pure: no I/O (hashing uses libgit2's in-memory SHA-1).
//
// A hunk's id is a content hash of the file's old and new path, the hunk's own lines (context,
// removed and added, with their origins and the "no newline at end of file" markers) and its
// ordinal among the hunks of that file with exactly those lines. Line numbers and the header are
// not part of it: an edit elsewhere in the file (which moves the hunk) keeps its id; a change to
// any of its lines, or to its context, makes a new one. The same hunk has the same id on every
// call and in every process.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "server/common/result.h"

namespace lockroom::workspace::review {

struct DiffLine {
  // ' ' context, '+' added, '-' removed; '=', '>', '<' mark "no newline at end of file" (as in
  // libgit2's GIT_DIFF_LINE_*_EOFNL) and carry no file content.
  char origin = ' ';
  std::string text;  // the line's bytes, with its '\n' when it has one
  int old_lineno = -1;
  int new_lineno = -1;
};

struct Hunk {
  std::string id;
  std::string header;  // "@@ -a,b +c,d @@ context\n"
  int old_start = 0, old_lines = 0, new_start = 0, new_lines = 0;
  std::vector<DiffLine> lines;
};

// What a hunk's id is made of apart from its ordinal (its `id` and positions are ignored).
std::string hunk_identity(std::string_view old_path, std::string_view new_path, const Hunk& hunk);
// The stable id of `hunk`: 16 hex digits. `ordinal` counts the hunks before it in the same file
// with the same identity (0 for the first), so identical hunks of one file get distinct ids.
std::string hunk_id(std::string_view old_path, std::string_view new_path, const Hunk& hunk, std::size_t ordinal = 0);
// Gives each of `hunks` (one file's, in order) its id.
void assign_hunk_ids(std::string_view old_path, std::string_view new_path, std::vector<Hunk>& hunks);

// `base` with only the hunks whose ids are in `selected` applied. Fails if a hunk does not fit
// `base` (its context or removed lines differ), which means the hunks are not of this base.
Result<std::string> apply_selected_hunks(std::string_view base, const std::vector<Hunk>& hunks,
                                         const std::set<std::string>& selected, std::string_view path);

}  // namespace lockroom::workspace::review
