// Workspace file operations that never follow a symlink (see safe_fs.h).
#include "server/workspace/review/safe_fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "server/workspace/review/path_rules.h"

namespace lockroom::workspace::review {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

Error io_error(std::string_view what, std::string_view rel, int err) {
  return make_error(ErrorCode::kUnavailable, std::string(what) + " " + printable(rel) + ": " + errno_text(err));
}

std::vector<std::string> components(std::string_view rel) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    std::size_t slash = rel.find('/', start);
    parts.emplace_back(rel.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return parts;
}

std::string base_name(std::string_view rel) {
  std::size_t slash = rel.rfind('/');
  return std::string(slash == std::string_view::npos ? rel : rel.substr(slash + 1));
}

std::string temp_name() {
  static thread_local std::mt19937_64 random{std::random_device{}()};
  char text[40];
  std::snprintf(text, sizeof text, ".lockroom-%016llx.tmp", static_cast<unsigned long long>(random()));
  return text;
}

Result<void> write_all(int fd, std::string_view bytes, std::string_view rel) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error("cannot write", rel, errno);
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

// Renames the temp file `tmp` in `dir` over `name` and makes both durable; removes `tmp` on failure.
Result<void> commit_temp(int dir, const std::string& tmp, const std::string& name, std::string_view rel) {
  if (::renameat(dir, tmp.c_str(), dir, name.c_str()) < 0) {
    int err = errno;
    ::unlinkat(dir, tmp.c_str(), 0);
    return io_error("cannot replace", rel, err);
  }
  ::fsync(dir);
  return {};
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

const char* kind_name(HostEntry::Kind kind) {
  switch (kind) {
    case HostEntry::Kind::kMissing: return "missing";
    case HostEntry::Kind::kFile: return "a file";
    case HostEntry::Kind::kSymlink: return "a symlink";
    case HostEntry::Kind::kDirectory: return "a directory";
    case HostEntry::Kind::kOther: return "a device, fifo or socket";
  }
  return "?";
}

Result<WorkspaceDir> WorkspaceDir::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return make_error(ErrorCode::kNotFound, "cannot open the workspace " + path + ": " + errno_text(errno));
  return WorkspaceDir(UniqueFd(fd));
}

Result<std::optional<UniqueFd>> WorkspaceDir::open_parent(std::string_view rel, bool create_missing) const {
  if (auto problem = path_problem(rel)) {
    return make_error(ErrorCode::kInvalidInput, "refused path " + printable(rel) + ": " + *problem);
  }
  std::vector<std::string> parts = components(rel);
  parts.pop_back();
  UniqueFd dir(::dup(root_.get()));
  if (!dir.valid()) return io_error("cannot open the directory of", rel, errno);
  std::string walked;
  for (const std::string& part : parts) {
    walked += (walked.empty() ? "" : "/") + part;
    int fd = ::openat(dir.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && create_missing) {
      if (::mkdirat(dir.get(), part.c_str(), 0777) < 0 && errno != EEXIST) return io_error("cannot create directory", walked, errno);
      fd = ::openat(dir.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0) {
      int err = errno;
      if (err == ENOENT) return std::optional<UniqueFd>();
      struct stat st;
      if (::fstatat(dir.get(), part.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
        return make_error(ErrorCode::kInvalidInput, "'" + printable(walked) +
                                                        "' is a symlink on the host; lockroom never writes through symlinks");
      }
      if (err == ENOTDIR || err == ELOOP) {
        return make_error(ErrorCode::kInvalidInput, "'" + printable(walked) + "' is not a directory on the host");
      }
      return io_error("cannot open directory", walked, err);
    }
    dir = UniqueFd(fd);
  }
  return std::optional<UniqueFd>(std::move(dir));
}

Result<HostEntry> WorkspaceDir::read(std::string_view rel, std::uint64_t max_bytes) const {
  auto parent = open_parent(rel, false);
  if (!parent) return parent.error();
  HostEntry entry;
  if (!*parent) return entry;  // a directory on the way is missing
  int dir = (*parent)->get();
  std::string name = base_name(rel);
  struct stat st;
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) {
    if (errno == ENOENT) return entry;
    return io_error("cannot inspect", rel, errno);
  }
  entry.permissions = st.st_mode & 07777;
  if (S_ISDIR(st.st_mode)) {
    entry.kind = HostEntry::Kind::kDirectory;
  } else if (S_ISLNK(st.st_mode)) {
    entry.kind = HostEntry::Kind::kSymlink;
    std::string target(4097, '\0');
    ssize_t n = ::readlinkat(dir, name.c_str(), target.data(), target.size());
    if (n < 0) return io_error("cannot read the symlink", rel, errno);
    if (static_cast<std::size_t>(n) == target.size()) return make_error(ErrorCode::kLimitExceeded, "the symlink " + printable(rel) + " has an overlong target");
    target.resize(static_cast<std::size_t>(n));
    entry.bytes = std::move(target);
  } else if (S_ISREG(st.st_mode)) {
    entry.kind = HostEntry::Kind::kFile;
    UniqueFd file(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!file.valid()) return io_error("cannot open", rel, errno);
    if (::fstat(file.get(), &st) < 0 || !S_ISREG(st.st_mode)) return io_error("cannot inspect", rel, errno);
    if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
      return make_error(ErrorCode::kLimitExceeded, "the host file " + printable(rel) + " is " + std::to_string(st.st_size) +
                                                       " bytes, over the limit of " + std::to_string(max_bytes));
    }
    entry.bytes.resize(static_cast<std::size_t>(st.st_size));
    std::size_t done = 0;
    while (true) {
      if (done == entry.bytes.size()) {
        if (entry.bytes.size() >= max_bytes) break;
        entry.bytes.resize(std::min<std::uint64_t>(max_bytes, entry.bytes.size() + 65536));  // it grew meanwhile
      }
      ssize_t n = ::read(file.get(), entry.bytes.data() + done, entry.bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return io_error("cannot read", rel, errno);
      if (n == 0) break;
      done += static_cast<std::size_t>(n);
    }
    entry.bytes.resize(done);
  } else {
    entry.kind = HostEntry::Kind::kOther;
  }
  return entry;
}

Result<void> WorkspaceDir::write_file(std::string_view rel, std::string_view bytes, bool executable,
                                      std::optional<mode_t> permissions) const {
  auto parent = open_parent(rel, true);
  if (!parent) return parent.error();
  int dir = (*parent)->get();
  std::string tmp = temp_name();
  UniqueFd file(::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, executable ? 0777 : 0666));
  if (!file.valid()) return io_error("cannot create a temporary file next to", rel, errno);
  auto fail = [&](Error error) -> Result<void> {
    ::unlinkat(dir, tmp.c_str(), 0);
    return error;
  };
  if (auto written = write_all(file.get(), bytes, rel); !written) return fail(written.error());
  if (permissions && ::fchmod(file.get(), *permissions) < 0) return fail(io_error("cannot set the mode of", rel, errno));
  if (::fsync(file.get()) < 0) return fail(io_error("cannot flush", rel, errno));
  if (::close(file.release()) < 0) return fail(io_error("cannot close", rel, errno));
  return commit_temp(dir, tmp, base_name(rel), rel);
}

Result<void> WorkspaceDir::write_symlink(std::string_view rel, std::string_view target) const {
  auto parent = open_parent(rel, true);
  if (!parent) return parent.error();
  int dir = (*parent)->get();
  std::string tmp = temp_name();
  if (::symlinkat(std::string(target).c_str(), dir, tmp.c_str()) < 0) return io_error("cannot create the symlink", rel, errno);
  return commit_temp(dir, tmp, base_name(rel), rel);
}

Result<void> WorkspaceDir::set_permissions(std::string_view rel, mode_t permissions) const {
  auto parent = open_parent(rel, false);
  if (!parent) return parent.error();
  if (!*parent) return make_error(ErrorCode::kNotFound, printable(rel) + " does not exist on the host");
  UniqueFd file(::openat((*parent)->get(), base_name(rel).c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!file.valid()) return io_error("cannot open", rel, errno);
  struct stat st;
  if (::fstat(file.get(), &st) < 0 || !S_ISREG(st.st_mode)) {
    return make_error(ErrorCode::kInvalidInput, printable(rel) + " is not a regular file on the host");
  }
  if (::fchmod(file.get(), permissions) < 0) return io_error("cannot set the mode of", rel, errno);
  return {};
}

Result<void> WorkspaceDir::remove(std::string_view rel) const {
  auto parent = open_parent(rel, false);
  if (!parent) return parent.error();
  if (!*parent) return {};
  std::string name = base_name(rel);
  struct stat st;
  if (::fstatat((*parent)->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) {
    return errno == ENOENT ? Result<void>() : Result<void>(io_error("cannot inspect", rel, errno));
  }
  if (S_ISDIR(st.st_mode)) return make_error(ErrorCode::kInvalidInput, printable(rel) + " is a directory on the host");
  if (::unlinkat((*parent)->get(), name.c_str(), 0) < 0) return io_error("cannot delete", rel, errno);
  ::fsync((*parent)->get());
  // Prune the directories this left empty, deepest first; stop at the first that is not empty.
  std::string dir_path(rel);
  for (std::size_t slash = dir_path.rfind('/'); slash != std::string::npos; slash = dir_path.rfind('/')) {
    dir_path.resize(slash);
    auto holder = open_parent(dir_path, false);
    if (!holder || !*holder) break;
    if (::unlinkat((*holder)->get(), base_name(dir_path).c_str(), AT_REMOVEDIR) < 0) break;
  }
  return {};
}

}  // namespace lockroom::workspace::review
