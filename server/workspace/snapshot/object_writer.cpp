// Writing a snapshot's objects into the store (see object_writer.h).
#include "server/workspace/snapshot/object_writer.h"

#include <fcntl.h>
#include <git2/sys/mempack.h>
#include <git2/sys/odb_backend.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "server/workspace/snapshot/snapshot_limits.h"

namespace lockroom::workspace::snapshot {
namespace {

constexpr std::size_t kReadChunk = 64 * 1024;
constexpr std::uint64_t kStreamAtLeast = 1 << 20;   // files from 1 MiB on are streamed
constexpr int kReadAttempts = 3;
constexpr int kPendingPriority = 999;  // above libgit2's own backends, as git2/sys/mempack.h asks

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

Error store_error(const std::string& path, int rc) {
  return make_error(ErrorCode::kInternal, git_error_text("cannot store " + path + " in the snapshot store", rc));
}

// Reads exactly `size` bytes into `sink`; false if the file ended first.
template <typename Sink>
Result<bool> read_exactly(int fd, std::uint64_t size, const std::string& path, Sink&& sink) {
  std::vector<char> buffer(static_cast<std::size_t>(std::min<std::uint64_t>(size, kReadChunk)));
  std::uint64_t done = 0;
  while (done < size) {
    std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(size - done, buffer.size()));
    ssize_t n = pread(fd, buffer.data(), want, static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(ErrorCode::kUnavailable, "cannot read " + path + ": " + std::strerror(errno));
    }
    if (n == 0) return false;
    if (auto r = sink(buffer.data(), static_cast<std::size_t>(n)); !r) return r.error();
    done += static_cast<std::uint64_t>(n);
  }
  return true;
}

}  // namespace

Result<ObjectWriter> ObjectWriter::attach(git_repository* store, const std::string& store_dir,
                                          std::uint64_t flush_after) {
  ObjectWriter writer;
  writer.store_ = store;
  writer.flush_after_ = flush_after;
  git_odb* raw = nullptr;
  if (int rc = git_repository_odb(&raw, store); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot open the snapshot store's objects", rc));
  }
  writer.odb_.reset(raw);
  if (int rc = git_mempack_new(&writer.pending_); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot collect objects in memory", rc));
  }
  if (int rc = git_odb_add_backend(writer.odb_.get(), writer.pending_, kPendingPriority); rc < 0) {
    writer.pending_->free(writer.pending_);
    return make_error(ErrorCode::kInternal, git_error_text("cannot collect objects in memory", rc));
  }

  raw = nullptr;
  git_odb_backend* loose = nullptr;
  if (int rc = git_odb_new(&raw); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot open the snapshot store's objects", rc));
  }
  writer.loose_.reset(raw);
  const std::string objects = store_dir + "/objects";
  if (int rc = git_odb_backend_loose(&loose, objects.c_str(), -1, 0, 0, 0); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot open the snapshot store's objects", rc));
  }
  if (int rc = git_odb_add_backend(writer.loose_.get(), loose, 1); rc < 0) {
    loose->free(loose);
    return make_error(ErrorCode::kInternal, git_error_text("cannot open the snapshot store's objects", rc));
  }
  return writer;
}

Result<bool> ObjectWriter::write_small(int fd, std::uint64_t size, const std::string& path, git_oid& id) {
  buffer_.clear();
  auto complete = read_exactly(fd, size, path, [&](const char* data, std::size_t n) -> Result<void> {
    buffer_.append(data, n);
    return {};
  });
  if (!complete || !*complete) return complete;
  if (int rc = git_odb_write(&id, odb_.get(), buffer_.data(), buffer_.size(), GIT_OBJECT_BLOB); rc < 0) {
    return store_error(path, rc);
  }
  note_if_new(id, size);
  return true;
}

Result<bool> ObjectWriter::write_streamed(int fd, std::uint64_t size, const std::string& path, git_oid& id) {
  git_odb_stream* raw = nullptr;
  if (int rc = git_odb_open_wstream(&raw, loose_.get(), static_cast<git_object_size_t>(size), GIT_OBJECT_BLOB);
      rc < 0) {
    return store_error(path, rc);
  }
  std::unique_ptr<git_odb_stream, GitDeleter<git_odb_stream, git_odb_stream_free>> stream(raw);
  auto complete = read_exactly(fd, size, path, [&](const char* data, std::size_t n) -> Result<void> {
    if (int rc = git_odb_stream_write(stream.get(), data, n); rc < 0) return store_error(path, rc);
    return {};
  });
  if (!complete || !*complete) return complete;
  if (int rc = git_odb_stream_finalize_write(&id, stream.get()); rc < 0) return store_error(path, rc);
  return true;
}

Result<StoredBlob> ObjectWriter::store_symlink(const std::string& path) {
  StoredBlob blob;
  if (lstat(path.c_str(), &blob.stat) != 0 || !S_ISLNK(blob.stat.st_mode)) {
    return make_error(ErrorCode::kNotFound, path + " disappeared or changed type during the snapshot; try again");
  }
  std::vector<char> target(static_cast<std::size_t>(blob.stat.st_size) + 1);
  ssize_t n = readlink(path.c_str(), target.data(), target.size());
  if (n < 0 || static_cast<std::size_t>(n) >= target.size()) {
    return make_error(ErrorCode::kUnavailable, "cannot read the symlink " + path + "; try again");
  }
  if (int rc = git_odb_write(&blob.id, odb_.get(), target.data(), static_cast<std::size_t>(n), GIT_OBJECT_BLOB);
      rc < 0) {
    return store_error(path, rc);
  }
  note_if_new(blob.id, static_cast<std::uint64_t>(n));
  return blob;
}

Result<StoredBlob> ObjectWriter::store_entry(const std::string& path, EntryKind kind, std::uint64_t max_bytes) {
  if (kind == EntryKind::kSymlink) return store_symlink(path);

  for (int attempt = 0; attempt < kReadAttempts; ++attempt) {
    Fd file;
    file.fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    StoredBlob blob;
    if (file.fd < 0 || fstat(file.fd, &blob.stat) != 0 || !S_ISREG(blob.stat.st_mode)) {
      return make_error(ErrorCode::kNotFound, path + " disappeared or changed type during the snapshot; try again");
    }
    const auto size = static_cast<std::uint64_t>(blob.stat.st_size);
    if (size > max_bytes) {
      return make_error(ErrorCode::kLimitExceeded, path + " grew to " + human_bytes(size) +
                                                       " during the snapshot, more than the single-file limit of " +
                                                       human_bytes(max_bytes) + ". Add it to .gitignore or raise the limit.");
    }
    auto complete = size >= kStreamAtLeast ? write_streamed(file.fd, size, path, blob.id)
                                           : write_small(file.fd, size, path, blob.id);
    if (!complete) return complete.error();
    if (!*complete) continue;  // shrank while being read: again
    if (pending_bytes_ >= flush_after_) {
      if (auto flushed = flush(); !flushed) return flushed.error();
    }
    return blob;
  }
  return make_error(ErrorCode::kUnavailable,
                    path + " kept shrinking while it was being read; try again once it is no longer being written");
}

bool ObjectWriter::pending(const git_oid& id) const {
  return pending_->exists(pending_, &id) != 0;
}

void ObjectWriter::note_if_new(const git_oid& id, std::uint64_t bytes) {
  if (!pending(id)) return;  // the store had it already: git_odb_write wrote nothing
  new_objects_.push_back(id);
  pending_bytes_ += bytes;
}

Result<void> ObjectWriter::add_new_trees(const git_oid& commit_id) {
  if (!pending(commit_id)) return {};
  new_objects_.push_back(commit_id);
  git_commit* raw_commit = nullptr;
  if (int rc = git_commit_lookup(&raw_commit, store_, &commit_id); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot read back the snapshot commit", rc));
  }
  CommitPtr commit(raw_commit);
  std::vector<git_oid> trees{*git_commit_tree_id(commit.get())};
  while (!trees.empty()) {
    const git_oid id = trees.back();
    trees.pop_back();
    if (!pending(id)) continue;  // an old tree: everything under it is old too
    new_objects_.push_back(id);
    git_tree* raw_tree = nullptr;
    if (int rc = git_tree_lookup(&raw_tree, store_, &id); rc < 0) {
      return make_error(ErrorCode::kInternal, git_error_text("cannot read back a snapshot tree", rc));
    }
    TreePtr tree(raw_tree);
    for (std::size_t i = 0, n = git_tree_entrycount(tree.get()); i < n; ++i) {
      const git_tree_entry* e = git_tree_entry_byindex(tree.get(), i);
      if (git_tree_entry_type(e) == GIT_OBJECT_TREE) trees.push_back(*git_tree_entry_id(e));
    }
  }
  return {};
}

Result<void> ObjectWriter::flush(const git_oid* commit) {
  if (commit) {
    if (auto r = add_new_trees(*commit); !r) return r;
  }
  if (!new_objects_.empty()) {
    git_packbuilder* raw = nullptr;
    if (int rc = git_packbuilder_new(&raw, store_); rc < 0) {
      return make_error(ErrorCode::kInternal, git_error_text("cannot pack the snapshot's objects", rc));
    }
    GitPtr<git_packbuilder, git_packbuilder_free> packer(raw);
    for (const auto& id : new_objects_) {
      if (int rc = git_packbuilder_insert(packer.get(), &id, nullptr); rc < 0) {
        return make_error(ErrorCode::kInternal, git_error_text("cannot pack the snapshot's objects", rc));
      }
    }
    if (int rc = git_packbuilder_write(packer.get(), nullptr, 0, nullptr, nullptr); rc < 0) {
      return make_error(ErrorCode::kUnavailable, git_error_text("cannot write a pack into the snapshot store", rc));
    }
  }
  if (int rc = git_mempack_reset(pending_); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot reset the in-memory objects", rc));
  }
  new_objects_.clear();
  pending_bytes_ = 0;
  return {};
}

}  // namespace lockroom::workspace::snapshot
