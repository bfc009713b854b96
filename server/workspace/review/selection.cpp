// From a Selection to planned per-file changes (see selection.h).
#include "server/workspace/review/selection.h"

#include <map>
#include <set>

#include "server/workspace/review/path_rules.h"
#include "server/workspace/review/review_git.h"

namespace lockroom::workspace::review {
namespace {

PlannedChange whole_file(const FileChange& change) {
  PlannedChange planned;
  planned.change = change;
  if (change.old_mode != 0) planned.base = TreeSide{change.old_mode, change.old_id};
  if (change.new_mode != 0) planned.target = TreeSide{change.new_mode, change.new_id};
  return planned;
}

bool is_regular(std::uint32_t mode) { return mode == GIT_FILEMODE_BLOB || mode == GIT_FILEMODE_BLOB_EXECUTABLE; }

Result<std::string> blob_bytes(git_repository* store, const git_oid& id) {
  git_blob* raw = nullptr;
  if (int rc = git_blob_lookup(&raw, store, &id); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot read blob " + oid_hex(id), rc));
  }
  BlobPtr blob(raw);
  return std::string(static_cast<const char*>(git_blob_rawcontent(blob.get())),
                     static_cast<std::size_t>(git_blob_rawsize(blob.get())));
}

// The planned change for some hunks of `change`, or the reason it cannot be done.
Result<PlannedChange> some_hunks(const Changes& changes, const FileChange& change, const std::vector<std::string>& ids) {
  std::string name = printable(change.path);
  if (change.binary || change.new_mode == 0 || !is_regular(change.new_mode) ||
      (change.old_mode != 0 && !is_regular(change.old_mode))) {
    return make_error(ErrorCode::kInvalidInput, "hunks can only be chosen in a changed text file; select " + name +
                                                    " as a whole instead");
  }
  if (ids.empty()) return make_error(ErrorCode::kInvalidInput, "the selection lists no hunks of " + name);
  auto diff = changes.diff(change.path);
  if (!diff) return diff.error();
  std::set<std::string> wanted(ids.begin(), ids.end());
  std::set<std::string> known;
  for (const Hunk& hunk : diff->hunks) known.insert(hunk.id);
  for (const std::string& id : wanted) {
    if (!known.count(id)) {
      return make_error(ErrorCode::kNotFound, "'" + printable(id, 40) + "' is not a hunk of " + name +
                                                  " (list the diff again: the changes may have moved on)");
    }
  }
  PlannedChange planned = whole_file(change);
  if (wanted.size() == known.size()) return planned;

  std::string base;
  if (change.old_mode != 0) {
    auto bytes = blob_bytes(changes.store(), change.old_id);
    if (!bytes) return bytes.error();
    base = std::move(*bytes);
  }
  auto content = apply_selected_hunks(base, diff->hunks, wanted, change.path);
  if (!content) return content.error();
  git_oid id;
  if (int rc = git_blob_create_from_buffer(&id, changes.store(), content->data(), content->size()); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot store the selected content of " + name, rc));
  }
  planned.target->blob = id;
  planned.partial = true;
  return planned;
}

// Why a change touches a path lockroom never writes (defence in depth: the manifest refuses
// such paths before they reach a tree), or nullopt.
std::optional<std::string> unsafe_path(const FileChange& change) {
  for (const std::string& path : {change.path, change.old_path}) {
    if (auto problem = path_problem(path)) return "refused path " + printable(path) + ": " + *problem;
  }
  return std::nullopt;
}

}  // namespace

Result<ResolvedSelection> resolve_selection(const Changes& changes, const Selection& selection) {
  ResolvedSelection resolved;
  if (selection.everything) {
    for (const FileChange& change : changes.list()) {
      if (auto problem = unsafe_path(change)) resolved.refused.push_back({printable(change.path), *problem});
      else resolved.changes.push_back(whole_file(change));
    }
    return resolved;
  }
  std::map<std::string, PlannedChange> by_path;  // keyed by the change's path: path order, one plan per change
  for (const FileSelection& wanted : selection.files) {
    const FileChange* change = changes.find(wanted.path);
    if (!change) {
      resolved.refused.push_back({printable(wanted.path), "not among the changed files"});
      continue;
    }
    if (auto problem = unsafe_path(*change)) {
      resolved.refused.push_back({printable(wanted.path), *problem});
      continue;
    }
    if (by_path.count(change->path)) {
      resolved.refused.push_back({printable(wanted.path), "selected more than once; the first selection is used"});
      continue;
    }
    if (!wanted.hunks) {
      by_path.emplace(change->path, whole_file(*change));
      continue;
    }
    auto planned = some_hunks(changes, *change, *wanted.hunks);
    if (!planned) {
      if (planned.error().code == ErrorCode::kInternal) return planned.error();
      resolved.refused.push_back({printable(wanted.path), planned.error().message});
      continue;
    }
    by_path.emplace(change->path, std::move(*planned));
  }
  for (auto& [path, planned] : by_path) resolved.changes.push_back(std::move(planned));
  return resolved;
}

}  // namespace lockroom::workspace::review
