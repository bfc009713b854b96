// Stable hunk ids and partial application of hunks (see hunks.h).
#include "server/workspace/review/hunks.h"

#include <git2.h>

#include <map>

#include "server/workspace/review/path_rules.h"
#include "server/workspace/review/review_git.h"

namespace lockroom::workspace::review {
namespace {

// `text` split after each '\n' (the last line may lack one).
std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    std::size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
    lines.push_back(text.substr(start, end - start));
    start = end;
  }
  return lines;
}

bool is_content_line(char origin) { return origin == ' ' || origin == '+' || origin == '-'; }

}  // namespace

std::string hunk_identity(std::string_view old_path, std::string_view new_path, const Hunk& hunk) {
  std::string material = "lockroom-hunk-v2";
  auto add = [&](std::string_view part) {
    material += std::to_string(part.size());
    material += ':';
    material.append(part);
  };
  add(old_path);
  add(new_path);
  for (const DiffLine& line : hunk.lines) {
    material += line.origin;
    add(line.text);
  }
  return material;
}

std::string hunk_id(std::string_view old_path, std::string_view new_path, const Hunk& hunk, std::size_t ordinal) {
  std::string material = hunk_identity(old_path, new_path, hunk);
  material += "#" + std::to_string(ordinal);
  git_oid id;
  git_odb_hash(&id, material.data(), material.size(), GIT_OBJECT_BLOB);
  return oid_hex(id).substr(0, 16);
}

void assign_hunk_ids(std::string_view old_path, std::string_view new_path, std::vector<Hunk>& hunks) {
  std::map<std::string, std::size_t> seen;
  for (Hunk& hunk : hunks) {
    std::size_t& ordinal = seen[hunk_identity(old_path, new_path, hunk)];
    hunk.id = hunk_id(old_path, new_path, hunk, ordinal++);
  }
}

Result<std::string> apply_selected_hunks(std::string_view base, const std::vector<Hunk>& hunks,
                                         const std::set<std::string>& selected, std::string_view path) {
  std::vector<std::string_view> lines = split_lines(base);
  auto misfit = [&](const Hunk& hunk) {
    return make_error(ErrorCode::kInvalidInput, "hunk " + hunk.id + " (" + hunk.header.substr(0, hunk.header.find('\n')) +
                                                    ") does not fit the base of " + printable(path));
  };
  std::string out;
  out.reserve(base.size());
  std::size_t pos = 0;
  for (const Hunk& hunk : hunks) {
    if (hunk.old_start < 0 || hunk.old_lines < 0) return misfit(hunk);
    std::size_t begin = hunk.old_lines == 0 ? std::size_t(hunk.old_start) : std::size_t(hunk.old_start) - 1;
    std::size_t end = begin + std::size_t(hunk.old_lines);
    if (hunk.old_start == 0 && hunk.old_lines != 0) return misfit(hunk);
    if (begin < pos || end > lines.size()) return misfit(hunk);
    for (std::size_t i = pos; i < begin; ++i) out.append(lines[i]);
    if (selected.count(hunk.id)) {
      std::size_t old_index = begin;
      for (const DiffLine& line : hunk.lines) {
        if (!is_content_line(line.origin)) continue;
        if (line.origin != '+') {
          if (old_index >= end || lines[old_index] != line.text) return misfit(hunk);
          ++old_index;
        }
        if (line.origin != '-') out.append(line.text);
      }
      if (old_index != end) return misfit(hunk);
    } else {
      for (std::size_t i = begin; i < end; ++i) out.append(lines[i]);
    }
    pos = end;
  }
  for (std::size_t i = pos; i < lines.size(); ++i) out.append(lines[i]);
  return out;
}

}  // namespace lockroom::workspace::review
