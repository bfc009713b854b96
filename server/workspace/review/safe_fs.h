// File operations inside the user's workspace that cannot escape it.
//
// Every path is walked from the workspace root's fd one component at a time with
// openat(O_NOFOLLOW | O_DIRECTORY), so a symlink anywhere on the way (made by the user or by
// anyone else) is refused instead of followed. Writes go to a temp file in the same directory,
// are fsynced and renamed over the target, so a file is either old or new, never half-written.
// Blocking I/O: call from a worker thread. Paths must already pass path_problem().
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "server/common/result.h"

namespace lockroom::workspace::review {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// What is at a workspace path on the host right now (never following a symlink).
struct HostEntry {
  enum class Kind { kMissing, kFile, kSymlink, kDirectory, kOther };
  Kind kind = Kind::kMissing;
  mode_t permissions = 0;  // st_mode & 07777
  std::string bytes;       // a file's content or a symlink's target

  bool executable() const { return (permissions & 0100) != 0; }
};
const char* kind_name(HostEntry::Kind kind);

class WorkspaceDir {
 public:
  static Result<WorkspaceDir> open(const std::string& path);

  // The directory holding `rel`. A missing directory on the way is created when `create_missing`
  // (and then reported as nullopt otherwise); a symlink or non-directory on the way is an error.
  Result<std::optional<UniqueFd>> open_parent(std::string_view rel, bool create_missing) const;

  // What is at `rel`. A file larger than `max_bytes` is an error.
  Result<HostEntry> read(std::string_view rel, std::uint64_t max_bytes) const;

  // Atomically replaces (or creates) `rel` with a regular file. `permissions` are applied exactly
  // when given; otherwise a new file gets 0666 or 0777 (executable) minus the umask.
  Result<void> write_file(std::string_view rel, std::string_view bytes, bool executable,
                          std::optional<mode_t> permissions) const;
  // Atomically replaces (or creates) `rel` with a symlink to `target`.
  Result<void> write_symlink(std::string_view rel, std::string_view target) const;
  // Sets the permissions of the regular file at `rel` (opened without following a symlink).
  Result<void> set_permissions(std::string_view rel, mode_t permissions) const;
  // Removes the file or symlink at `rel` (never a directory), then every parent directory that it
  // left empty, up to (not including) the workspace root.
  Result<void> remove(std::string_view rel) const;

 private:
  explicit WorkspaceDir(UniqueFd root) : root_(std::move(root)) {}
  UniqueFd root_;
};

}  // namespace lockroom::workspace::review
