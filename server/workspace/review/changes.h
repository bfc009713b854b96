// What the agent changed: the diff between the base tree (the snapshot that went into the
// sandbox) and the result tree (built from the guest's manifest), both in lockroom's store.
//
// Serves changes/list (per-file summary), changes/diff (hunks with stable ids plus the unified
// patch) and changes/content (one file's base or current bytes, bounded). Renames are detected
// with libgit2's similarity search; order is by path, so every call answers the same way.
// compute() keeps the patches it made for the line counts (up to kMaxKeptPatchBytes of blob
// content), so diff() does not compute them again; with many files it makes them on two threads.
// Blocking libgit2 reads: use from a worker thread. A Changes borrows the store, which must
// outlive it; it is not safe to use one Changes from two threads at once.
#pragma once

#include <git2.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/common/result.h"
#include "server/workspace/git_util.h"
#include "server/workspace/review/hunks.h"

namespace lockroom::workspace::review {

enum class ChangeStatus { kAdded, kModified, kDeleted, kRenamed, kTypeChange };
const char* status_name(ChangeStatus status);  // "added", "modified", ...

struct FileChange {
  std::string path;      // the new path (for a deletion: the path that was deleted)
  std::string old_path;  // the base path; differs from `path` only for renames
  ChangeStatus status = ChangeStatus::kModified;
  bool binary = false;
  std::size_t added_lines = 0;
  std::size_t removed_lines = 0;
  std::uint32_t old_mode = 0;  // 0 when there is no old file
  std::uint32_t new_mode = 0;  // 0 when there is no new file
  git_oid old_id{};            // zero when there is no old file
  git_oid new_id{};            // zero when there is no new file
};

struct FileDiff {
  FileChange change;
  std::vector<Hunk> hunks;  // none for binary files and pure mode changes
  std::string patch;        // the unified patch of this file, as `git diff` prints it
};

enum class Side { kBase, kCurrent };

struct FileContent {
  bool binary = false;
  std::uint32_t mode = 0;
  std::string bytes;  // the raw content (the edge encodes binaries)
};

struct ChangesOptions {
  std::uint64_t max_content_bytes = std::uint64_t(16) << 20;  // changes/content refuses larger files
  std::uint32_t context_lines = 3;
};

class Changes {
 public:
  static Result<Changes> compute(git_repository* store, const git_oid& base_tree, const git_oid& result_tree,
                                 const ChangesOptions& options = {});

  const std::vector<FileChange>& list() const { return files_; }
  // The change touching `path` (its new or its old path), or nullptr.
  const FileChange* find(std::string_view path) const;

  Result<std::vector<FileDiff>> diff_all() const;
  // The changes as one patch that `git apply` takes: binary files as binary patches, full blob
  // ids in the index lines (diff() shows "Binary files differ" and short ids, as git diff does).
  // With `only`, just the changes touching those paths (a rename by either of its paths).
  Result<std::string> patch_for_git_apply(const std::vector<std::string>& only = {}) const;
  Result<FileDiff> diff(std::string_view path) const;

  // `path` as it is in the base or the result tree (any file there, changed or not).
  Result<FileContent> content(std::string_view path, Side side) const;

  // Roughly what this object holds in memory: the content of the patches compute() kept.
  std::uint64_t kept_bytes() const { return kept_bytes_; }

  git_repository* store() const { return store_; }
  const git_oid& base_tree() const { return base_tree_; }
  const git_oid& result_tree() const { return result_tree_; }

 private:
  Changes() = default;
  Result<FileDiff> diff_at(std::size_t file_index) const;

  git_repository* store_ = nullptr;
  git_oid base_tree_{};
  git_oid result_tree_{};
  ChangesOptions options_;
  DiffPtr diff_;
  std::vector<FileChange> files_;        // sorted by path
  std::vector<std::size_t> delta_of_;    // files_[i] is delta delta_of_[i] of diff_
  // files_[i]'s patch as compute() made it (for its line counts), or null past the bound.
  std::vector<PatchPtr> patches_;
  std::uint64_t kept_bytes_ = 0;
  static constexpr std::uint64_t kMaxKeptPatchBytes = std::uint64_t(64) << 20;  // of blob content
};

}  // namespace lockroom::workspace::review
