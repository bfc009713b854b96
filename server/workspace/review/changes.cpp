// The base → result diff and the review queries on it (see changes.h).
#include "server/workspace/review/changes.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <set>
#include <thread>

#include "server/workspace/review/path_rules.h"
#include "server/workspace/review/review_git.h"

namespace lockroom::workspace::review {
namespace {

Result<TreePtr> lookup_tree(git_repository* repo, const git_oid& id, const char* which) {
  git_tree* raw = nullptr;
  if (int rc = git_tree_lookup(&raw, repo, &id); rc < 0) {
    return make_error(ErrorCode::kNotFound, git_error_text(std::string("the ") + which + " tree " + oid_hex(id) + " is not in the store", rc));
  }
  return TreePtr(raw);
}

ChangeStatus status_of(git_delta_t status) {
  switch (status) {
    case GIT_DELTA_ADDED: return ChangeStatus::kAdded;
    case GIT_DELTA_DELETED: return ChangeStatus::kDeleted;
    case GIT_DELTA_RENAMED: return ChangeStatus::kRenamed;
    case GIT_DELTA_TYPECHANGE: return ChangeStatus::kTypeChange;
    default: return ChangeStatus::kModified;
  }
}

Result<PatchPtr> patch_of(git_diff* diff, std::size_t delta) {
  git_patch* raw = nullptr;
  if (int rc = git_patch_from_diff(&raw, diff, delta); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot compute the patch", rc));
  }
  return PatchPtr(raw);
}

}  // namespace

const char* status_name(ChangeStatus status) {
  switch (status) {
    case ChangeStatus::kAdded: return "added";
    case ChangeStatus::kModified: return "modified";
    case ChangeStatus::kDeleted: return "deleted";
    case ChangeStatus::kRenamed: return "renamed";
    case ChangeStatus::kTypeChange: return "typechange";
  }
  return "modified";
}

namespace {

// The base → result diff with renames found, as every Changes query sees it.
Result<DiffPtr> tree_diff(git_repository* store, const git_oid& base_tree, const git_oid& result_tree, std::uint32_t flags,
                          std::uint32_t context_lines) {
  auto base = lookup_tree(store, base_tree, "base");
  if (!base) return base.error();
  auto result = lookup_tree(store, result_tree, "result");
  if (!result) return result.error();
  git_diff_options diff_options = GIT_DIFF_OPTIONS_INIT;
  diff_options.flags = flags;
  diff_options.context_lines = context_lines;
  diff_options.id_abbrev = (flags & GIT_DIFF_SHOW_BINARY) ? GIT_OID_HEXSZ : 0;
  git_diff* raw = nullptr;
  if (int rc = git_diff_tree_to_tree(&raw, store, base->get(), result->get(), &diff_options); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot diff the base and result trees", rc));
  }
  DiffPtr diff(raw);
  git_diff_find_options find = GIT_DIFF_FIND_OPTIONS_INIT;
  find.flags = GIT_DIFF_FIND_RENAMES;
  if (int rc = git_diff_find_similar(diff.get(), &find); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot detect renames", rc));
  }
  return diff;
}

// One delta's summary and patch (kept while `kept_bytes` stays within `keep_up_to`).
Result<std::pair<FileChange, PatchPtr>> describe_delta(git_diff* diff, std::size_t index, std::uint64_t& kept_bytes,
                                                       std::uint64_t keep_up_to) {
  auto patch = patch_of(diff, index);
  if (!patch) return patch.error();
  const git_diff_delta* delta = git_patch_get_delta(patch->get());
  FileChange file;
  file.status = status_of(delta->status);
  bool has_old = delta->status != GIT_DELTA_ADDED;
  bool has_new = delta->status != GIT_DELTA_DELETED;
  file.path = has_new ? delta->new_file.path : delta->old_file.path;
  file.old_path = has_old ? delta->old_file.path : delta->new_file.path;
  file.binary = (delta->flags & GIT_DIFF_FLAG_BINARY) != 0;
  if (has_old) { file.old_mode = delta->old_file.mode; file.old_id = delta->old_file.id; }
  if (has_new) { file.new_mode = delta->new_file.mode; file.new_id = delta->new_file.id; }
  std::size_t context = 0, added = 0, removed = 0;
  git_patch_line_stats(&context, &added, &removed, patch->get());
  file.added_lines = added;
  file.removed_lines = removed;
  kept_bytes += delta->old_file.size + delta->new_file.size;
  return std::make_pair(std::move(file), kept_bytes <= keep_up_to ? std::move(*patch) : PatchPtr());
}

constexpr std::size_t kParallelFrom = 16;  // deltas; fewer are not worth a second thread

}  // namespace

Result<Changes> Changes::compute(git_repository* store, const git_oid& base_tree, const git_oid& result_tree,
                                 const ChangesOptions& options) {
  ensure_libgit2();
  auto diff = tree_diff(store, base_tree, result_tree, GIT_DIFF_INCLUDE_TYPECHANGE, options.context_lines);
  if (!diff) return diff.error();
  Changes changes;
  changes.diff_ = std::move(*diff);
  changes.store_ = store;
  changes.base_tree_ = base_tree;
  changes.result_tree_ = result_tree;
  changes.options_ = options;

  // The patches (most of the time: reading blobs, diffing lines) are made on two threads when
  // there are many: the second half from a second, identical diff of its own (a git_diff is not
  // safe to share between threads; its deltas come in the same order).
  std::size_t count = git_diff_num_deltas(changes.diff_.get());
  std::size_t split = count >= kParallelFrom && std::thread::hardware_concurrency() > 1 ? count / 2 : count;
  std::vector<std::pair<FileChange, PatchPtr>> described(count);
  std::optional<Error> second_failed;
  std::thread second;
  if (split < count) {
    second = std::thread([&] {
      auto own = tree_diff(store, base_tree, result_tree, GIT_DIFF_INCLUDE_TYPECHANGE, options.context_lines);
      if (!own) return void(second_failed = own.error());
      if (git_diff_num_deltas(own->get()) != count)
        return void(second_failed = make_error(ErrorCode::kInternal, "the same two trees gave two different diffs"));
      std::uint64_t kept = 0;
      for (std::size_t i = split; i < count; ++i) {
        auto one = describe_delta(own->get(), i, kept, kMaxKeptPatchBytes / 2);
        if (!one) return void(second_failed = one.error());
        described[i] = std::move(*one);
      }
    });
  }
  std::optional<Error> first_failed;
  std::uint64_t kept = 0;
  for (std::size_t i = 0; i < split && !first_failed; ++i) {
    auto one = describe_delta(changes.diff_.get(), i, kept, split < count ? kMaxKeptPatchBytes / 2 : kMaxKeptPatchBytes);
    if (!one) first_failed = one.error();
    else described[i] = std::move(*one);
  }
  if (second.joinable()) second.join();
  if (first_failed) return *first_failed;
  if (second_failed) return *second_failed;

  std::vector<std::size_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const FileChange& x = described[a].first;
    const FileChange& y = described[b].first;
    return x.path != y.path ? x.path < y.path : x.old_path < y.old_path;
  });
  for (std::size_t i : order) {
    if (described[i].second) {  // a patch holds both sides' content
      const git_diff_delta* delta = git_patch_get_delta(described[i].second.get());
      changes.kept_bytes_ += delta->old_file.size + delta->new_file.size;
    }
    changes.files_.push_back(std::move(described[i].first));
    changes.patches_.push_back(std::move(described[i].second));
    changes.delta_of_.push_back(i);
  }
  return changes;
}

const FileChange* Changes::find(std::string_view path) const {
  for (const FileChange& file : files_) {
    if (file.path == path) return &file;
  }
  for (const FileChange& file : files_) {
    if (file.old_path == path) return &file;
  }
  return nullptr;
}

Result<FileDiff> Changes::diff_at(std::size_t file_index) const {
  PatchPtr computed;
  git_patch* patch = patches_[file_index].get();
  if (!patch) {
    auto made = patch_of(diff_.get(), delta_of_[file_index]);
    if (!made) return made.error();
    computed = std::move(*made);
    patch = computed.get();
  }
  FileDiff out;
  out.change = files_[file_index];
  std::size_t hunk_count = git_patch_num_hunks(patch);
  for (std::size_t h = 0; h < hunk_count; ++h) {
    const git_diff_hunk* raw_hunk = nullptr;
    std::size_t line_count = 0;
    if (int rc = git_patch_get_hunk(&raw_hunk, &line_count, patch, h); rc < 0) {
      return make_error(ErrorCode::kInternal, git_error_text("cannot read a hunk of " + printable(out.change.path), rc));
    }
    Hunk hunk;
    hunk.header.assign(raw_hunk->header, raw_hunk->header_len);
    hunk.old_start = raw_hunk->old_start;
    hunk.old_lines = raw_hunk->old_lines;
    hunk.new_start = raw_hunk->new_start;
    hunk.new_lines = raw_hunk->new_lines;
    for (std::size_t l = 0; l < line_count; ++l) {
      const git_diff_line* raw_line = nullptr;
      if (int rc = git_patch_get_line_in_hunk(&raw_line, patch, h, l); rc < 0) {
        return make_error(ErrorCode::kInternal, git_error_text("cannot read a line of " + printable(out.change.path), rc));
      }
      hunk.lines.push_back(DiffLine{raw_line->origin, std::string(raw_line->content, raw_line->content_len),
                                    raw_line->old_lineno, raw_line->new_lineno});
    }
    out.hunks.push_back(std::move(hunk));
  }
  assign_hunk_ids(out.change.old_path, out.change.path, out.hunks);
  OwnedBuf text;
  if (int rc = git_patch_to_buf(&text.buf, patch); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot print the patch of " + printable(out.change.path), rc));
  }
  out.patch = std::string(text.view());
  return out;
}

Result<std::vector<FileDiff>> Changes::diff_all() const {
  std::vector<FileDiff> all;
  all.reserve(files_.size());
  for (std::size_t i = 0; i < files_.size(); ++i) {
    auto one = diff_at(i);
    if (!one) return one.error();
    all.push_back(std::move(*one));
  }
  return all;
}

Result<std::string> Changes::patch_for_git_apply(const std::vector<std::string>& only) const {
  std::set<std::string_view> wanted(only.begin(), only.end());
  // Without GIT_DIFF_INCLUDE_TYPECHANGE a type change is a removal and an addition, as git writes it.
  auto made = tree_diff(store_, base_tree_, result_tree_, GIT_DIFF_SHOW_BINARY, options_.context_lines);
  if (!made) return made.error();
  DiffPtr diff = std::move(*made);
  // libgit2 writes a type change's addition before its removal; git apply needs the removal first.
  std::size_t count = git_diff_num_deltas(diff.get());
  std::vector<std::size_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  for (std::size_t i = 0; i + 1 < count; ++i) {
    const git_diff_delta* a = git_diff_get_delta(diff.get(), order[i]);
    const git_diff_delta* b = git_diff_get_delta(diff.get(), order[i + 1]);
    if (a->status == GIT_DELTA_ADDED && b->status == GIT_DELTA_DELETED && std::string_view(a->new_file.path) == b->old_file.path)
      std::swap(order[i], order[i + 1]);
  }
  std::string out;
  for (std::size_t i : order) {
    const git_diff_delta* delta = git_diff_get_delta(diff.get(), i);
    if (!wanted.empty() && !wanted.count(delta->new_file.path) && !wanted.count(delta->old_file.path)) continue;
    auto patch = patch_of(diff.get(), i);
    if (!patch) return patch.error();
    OwnedBuf text;
    if (int rc = git_patch_to_buf(&text.buf, patch->get()); rc < 0)
      return make_error(ErrorCode::kInternal, git_error_text("cannot print the patch", rc));
    out += text.view();
  }
  return out;
}

Result<FileDiff> Changes::diff(std::string_view path) const {
  const FileChange* file = find(path);
  if (!file) return make_error(ErrorCode::kNotFound, "'" + printable(path) + "' is not among the changed files");
  return diff_at(static_cast<std::size_t>(file - files_.data()));
}

Result<FileContent> Changes::content(std::string_view path, Side side) const {
  const git_oid& tree_id = side == Side::kBase ? base_tree_ : result_tree_;
  const char* which = side == Side::kBase ? "base" : "current";
  auto tree = lookup_tree(store_, tree_id, which);
  if (!tree) return tree.error();
  std::string p(path);
  git_tree_entry* raw_entry = nullptr;
  if (git_tree_entry_bypath(&raw_entry, tree->get(), p.c_str()) < 0) {
    return make_error(ErrorCode::kNotFound, "'" + printable(path) + "' does not exist in the " + which + " version");
  }
  GitPtr<git_tree_entry, git_tree_entry_free> entry(raw_entry);
  if (git_tree_entry_type(entry.get()) != GIT_OBJECT_BLOB) {
    return make_error(ErrorCode::kInvalidInput, "'" + printable(path) + "' is a directory, not a file");
  }
  git_blob* raw_blob = nullptr;
  if (int rc = git_blob_lookup(&raw_blob, store_, git_tree_entry_id(entry.get())); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot read " + printable(path), rc));
  }
  BlobPtr blob(raw_blob);
  auto size = static_cast<std::uint64_t>(git_blob_rawsize(blob.get()));
  if (size > options_.max_content_bytes) {
    return make_error(ErrorCode::kLimitExceeded, "'" + printable(path) + "' is " + std::to_string(size) +
                                                     " bytes; content is served only up to " +
                                                     std::to_string(options_.max_content_bytes) + " bytes");
  }
  FileContent out;
  out.mode = git_tree_entry_filemode(entry.get());
  out.binary = git_blob_is_binary(blob.get()) != 0;
  out.bytes.assign(static_cast<const char*>(git_blob_rawcontent(blob.get())), size);
  return out;
}

}  // namespace lockroom::workspace::review
