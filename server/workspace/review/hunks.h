// Diff hunks as the review library hands them out, their stable ids, and "base + the selected
// hunks" for partial acceptance. Pure: no I/O (hashing uses libgit2's in-memory SHA-1).
//
// A hunk's id is a content hash of the file's old and new path, the hunk's old/new ranges and its
// lines, so the same hunk has the same id on every call and in every process.
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

// The stable id of `hunk` (its `id` field is ignored): 16 hex digits.
std::string hunk_id(std::string_view old_path, std::string_view new_path, const Hunk& hunk);

// `base` with only the hunks whose ids are in `selected` applied. Fails if a hunk does not fit
// `base` (its context or removed lines differ), which means the hunks are not of this base.
Result<std::string> apply_selected_hunks(std::string_view base, const std::vector<Hunk>& hunks,
                                         const std::set<std::string>& selected, std::string_view path);

}  // namespace lockroom::workspace::review
