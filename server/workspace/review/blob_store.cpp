// Blob intake and result-tree building (see blob_store.h).
#include "server/workspace/review/blob_store.h"

#include <algorithm>
#include <set>

#include "server/workspace/review/path_rules.h"
#include "server/workspace/review/review_git.h"

namespace lockroom::workspace::review {
namespace {

Result<OdbPtr> open_odb(git_repository* store) {
  git_odb* raw = nullptr;
  if (int rc = git_repository_odb(&raw, store); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot open lockroom's object store", rc));
  }
  return OdbPtr(raw);
}

Error mismatch(std::string_view path, const git_oid& claimed) {
  return make_error(ErrorCode::kInvalidInput, "blob for " + printable(path) + " does not match its id " +
                                                  oid_hex(claimed) + "; the guest sent different content");
}

std::string list_paths(const std::vector<std::string>& paths) {
  std::string text;
  for (std::size_t i = 0; i < paths.size() && i < 5; ++i) text += (i ? ", " : "") + paths[i];
  if (paths.size() > 5) text += " and " + std::to_string(paths.size() - 5) + " more";
  return text;
}

}  // namespace

Result<std::vector<git_oid>> missing_blobs(git_repository* store, const Manifest& manifest) {
  ensure_libgit2();
  auto odb = open_odb(store);
  if (!odb) return odb.error();
  // Looked up without a rescan of the pack folder per miss (libgit2's default), then the misses
  // once more after one rescan: a pack another handle wrote since is seen, at the cost of one.
  std::set<git_oid, OidLess> missing;
  for (const ManifestFile& file : manifest.files) {
    if (!git_odb_exists_ext(odb->get(), &file.id, GIT_ODB_LOOKUP_NO_REFRESH)) missing.insert(file.id);
  }
  if (missing.empty()) return std::vector<git_oid>();
  if (int rc = git_odb_refresh(odb->get()); rc < 0)
    return make_error(ErrorCode::kInternal, git_error_text("cannot rescan lockroom's object store", rc));
  std::vector<git_oid> still;
  for (const git_oid& id : missing)
    if (!git_odb_exists_ext(odb->get(), &id, GIT_ODB_LOOKUP_NO_REFRESH)) still.push_back(id);
  return still;
}

Result<void> store_blob(git_repository* store, const git_oid& claimed, std::string_view content, std::string_view path) {
  ensure_libgit2();
  git_oid actual;
  if (int rc = git_odb_hash(&actual, content.data(), content.size(), GIT_OBJECT_BLOB); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot hash the blob for " + printable(path), rc));
  }
  if (!oid_equal(actual, claimed)) return mismatch(path, claimed);
  auto odb = open_odb(store);
  if (!odb) return odb.error();
  if (git_odb_exists_ext(odb->get(), &claimed, GIT_ODB_LOOKUP_NO_REFRESH)) return {};
  git_oid written;
  if (int rc = git_odb_write(&written, odb->get(), content.data(), content.size(), GIT_OBJECT_BLOB); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot store the blob for " + printable(path), rc));
  }
  return {};
}

BlobWriter::BlobWriter(git_repository* store, const git_oid& claimed, std::uint64_t declared_size, std::string path,
                       std::uint64_t max_blob_bytes)
    : store_(store), claimed_(claimed), declared_size_(declared_size), max_blob_bytes_(max_blob_bytes),
      path_(std::move(path)) {}

Result<void> BlobWriter::write(std::string_view chunk) {
  if (finished_) return make_error(ErrorCode::kWrongState, "the blob for " + printable(path_) + " is already finished");
  if (declared_size_ > max_blob_bytes_) {
    return make_error(ErrorCode::kLimitExceeded, "the blob for " + printable(path_) + " is declared as " +
                                                     std::to_string(declared_size_) + " bytes, over the limit of " +
                                                     std::to_string(max_blob_bytes_));
  }
  if (chunk.size() > declared_size_ - buffer_.size()) {
    return make_error(ErrorCode::kInvalidInput, "the guest sent more than the declared " + std::to_string(declared_size_) +
                                                    " bytes for " + printable(path_));
  }
  buffer_.append(chunk);
  return {};
}

Result<void> BlobWriter::finish() {
  if (finished_) return make_error(ErrorCode::kWrongState, "the blob for " + printable(path_) + " is already finished");
  finished_ = true;
  if (buffer_.size() != declared_size_) {
    return make_error(ErrorCode::kInvalidInput, "the guest sent " + std::to_string(buffer_.size()) + " of the declared " +
                                                    std::to_string(declared_size_) + " bytes for " + printable(path_));
  }
  auto stored = store_blob(store_, claimed_, buffer_, path_);
  std::string().swap(buffer_);
  return stored;
}

Result<git_oid> build_result_tree(git_repository* store, const Manifest& manifest) {
  ensure_libgit2();
  auto odb = open_odb(store);
  if (!odb) return odb.error();
  std::vector<std::string> missing, wrong;
  for (const ManifestFile& file : manifest.files) {
    std::size_t size = 0;
    git_object_t type = GIT_OBJECT_INVALID;
    if (git_odb_read_header(&size, &type, odb->get(), &file.id) < 0) {
      missing.push_back(printable(file.path));
    } else if (type != GIT_OBJECT_BLOB || size != file.size) {
      wrong.push_back(printable(file.path) + " (" + std::to_string(size) + " bytes, claimed " + std::to_string(file.size) + ")");
    }
  }
  if (!missing.empty()) {
    return make_error(ErrorCode::kWrongState, std::to_string(missing.size()) +
                                                  " blobs are still missing from the store: " + list_paths(missing) +
                                                  "; fetch them from the guest first");
  }
  if (!wrong.empty()) {
    return make_error(ErrorCode::kInvalidInput, "the stored blob differs in size from what the manifest claims for " +
                                                    list_paths(wrong));
  }

  git_index* raw_index = nullptr;
  if (int rc = git_index_new(&raw_index); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot create an in-memory index", rc));
  }
  IndexPtr index(raw_index);
  for (const ManifestFile& file : manifest.files) {
    git_index_entry entry{};
    entry.path = file.path.c_str();
    entry.mode = file.mode;
    entry.id = file.id;
    entry.file_size = static_cast<std::uint32_t>(std::min<std::uint64_t>(file.size, UINT32_MAX));
    if (int rc = git_index_add(index.get(), &entry); rc < 0) {
      return make_error(ErrorCode::kInvalidInput, git_error_text("cannot add " + printable(file.path) + " to the result tree", rc));
    }
  }
  git_oid tree;
  if (int rc = git_index_write_tree_to(&tree, index.get(), store); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot write the result tree", rc));
  }
  return tree;
}

}  // namespace lockroom::workspace::review
