// The snapshot store: opening, naming, pinning and blob writing (see snapshot_store.h).
#include "server/workspace/snapshot/snapshot_store.h"

#include "server/workspace/snapshot/snapshot_limits.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

namespace lockroom::workspace::snapshot {
namespace {

constexpr std::size_t kReadChunk = 64 * 1024;
constexpr std::uint64_t kStreamAtLeast = 1 << 20;  // files from 1 MiB on are streamed
constexpr int kReadAttempts = 3;

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

bool valid_id_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
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

Result<bool> write_small(git_odb* odb, int fd, std::uint64_t size, const std::string& path, git_oid& id) {
  std::string content;
  content.reserve(static_cast<std::size_t>(size));
  auto complete = read_exactly(fd, size, path, [&](const char* data, std::size_t n) -> Result<void> {
    content.append(data, n);
    return {};
  });
  if (!complete || !*complete) return complete;
  if (int rc = git_odb_write(&id, odb, content.data(), content.size(), GIT_OBJECT_BLOB); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot store " + path + " in the snapshot store", rc));
  }
  return true;
}

Result<bool> write_streamed(git_odb* odb, int fd, std::uint64_t size, const std::string& path, git_oid& id) {
  git_odb_stream* raw = nullptr;
  if (int rc = git_odb_open_wstream(&raw, odb, static_cast<git_object_size_t>(size), GIT_OBJECT_BLOB); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot store " + path + " in the snapshot store", rc));
  }
  std::unique_ptr<git_odb_stream, GitDeleter<git_odb_stream, git_odb_stream_free>> stream(raw);
  auto complete = read_exactly(fd, size, path, [&](const char* data, std::size_t n) -> Result<void> {
    if (int rc = git_odb_stream_write(stream.get(), data, n); rc < 0) {
      return make_error(ErrorCode::kInternal, git_error_text("cannot store " + path + " in the snapshot store", rc));
    }
    return {};
  });
  if (!complete || !*complete) return complete;
  if (int rc = git_odb_stream_finalize_write(&id, stream.get()); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot store " + path + " in the snapshot store", rc));
  }
  return true;
}

Result<StoredBlob> store_symlink(git_odb* odb, const std::string& path) {
  StoredBlob blob;
  if (lstat(path.c_str(), &blob.stat) != 0 || !S_ISLNK(blob.stat.st_mode)) {
    return make_error(ErrorCode::kNotFound, path + " disappeared or changed type during the snapshot; try again");
  }
  std::vector<char> target(static_cast<std::size_t>(blob.stat.st_size) + 1);
  ssize_t n = readlink(path.c_str(), target.data(), target.size());
  if (n < 0 || static_cast<std::size_t>(n) >= target.size()) {
    return make_error(ErrorCode::kUnavailable, "cannot read the symlink " + path + "; try again");
  }
  if (int rc = git_odb_write(&blob.id, odb, target.data(), static_cast<std::size_t>(n), GIT_OBJECT_BLOB); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot store " + path + " in the snapshot store", rc));
  }
  return blob;
}

}  // namespace

std::string workspace_store_key(std::string_view workspace_real_path) {
  ensure_libgit2();
  std::string_view trimmed = workspace_real_path;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.remove_suffix(1);
  std::string_view last = trimmed.substr(trimmed.rfind('/') + 1);
  std::string name;
  for (char c : last.substr(0, 40)) name += valid_id_char(c) && c != '.' ? c : '_';
  if (name.empty()) name = "root";

  git_oid digest;
  git_odb_hash(&digest, trimmed.data(), trimmed.size(), GIT_OBJECT_BLOB);
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof hex, &digest);
  return name + "-" + std::string(hex, 16);
}

Result<RepoPtr> open_store(const std::string& store_dir) {
  ensure_libgit2();
  git_repository* raw = nullptr;
  if (git_repository_open_bare(&raw, store_dir.c_str()) == 0) return RepoPtr(raw);
  git_repository_init_options opts = GIT_REPOSITORY_INIT_OPTIONS_INIT;
  opts.flags = GIT_REPOSITORY_INIT_BARE | GIT_REPOSITORY_INIT_MKPATH;
  if (int rc = git_repository_init_ext(&raw, store_dir.c_str(), &opts); rc < 0) {
    return make_error(ErrorCode::kUnavailable, git_error_text("cannot create the snapshot store " + store_dir, rc));
  }
  return RepoPtr(raw);
}

Result<std::string> snapshot_ref_name(std::string_view id) {
  bool ok = !id.empty() && id.size() <= 64 && id.front() != '.' && id.front() != '-';
  for (char c : id) ok = ok && valid_id_char(c);
  if (!ok || id.find("..") != std::string_view::npos || (id.size() >= 5 && id.substr(id.size() - 5) == ".lock")) {
    return make_error(ErrorCode::kInvalidInput,
                      "invalid snapshot id \"" + std::string(id.substr(0, 80)) +
                          "\": use 1-64 letters, digits, '.', '_' or '-', not starting with '.' or '-'");
  }
  return "refs/lockroom/snapshots/" + std::string(id);
}

Result<void> release_snapshot(git_repository* store, std::string_view id) {
  auto name = snapshot_ref_name(id);
  if (!name) return name.error();
  git_reference* raw = nullptr;
  int rc = git_reference_lookup(&raw, store, name->c_str());
  if (rc == GIT_ENOTFOUND) return {};
  ReferencePtr ref(raw);
  if (rc == 0) rc = git_reference_delete(ref.get());
  if (rc < 0) return make_error(ErrorCode::kInternal, git_error_text("cannot release snapshot " + std::string(id), rc));
  return {};
}

Result<StoredBlob> store_entry(git_odb* odb, const std::string& path, EntryKind kind, std::uint64_t max_bytes) {
  if (kind == EntryKind::kSymlink) return store_symlink(odb, path);

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
    auto complete = size >= kStreamAtLeast ? write_streamed(odb, file.fd, size, path, blob.id)
                                           : write_small(odb, file.fd, size, path, blob.id);
    if (!complete) return complete.error();
    if (*complete) return blob;
  }
  return make_error(ErrorCode::kUnavailable,
                    path + " kept shrinking while it was being read; try again once it is no longer being written");
}

}  // namespace lockroom::workspace::snapshot
