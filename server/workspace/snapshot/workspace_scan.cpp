// Selection of a workspace's files (see workspace_scan.h).
#include "server/workspace/snapshot/workspace_scan.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "server/workspace/git_util.h"
#include "server/workspace/snapshot/guest_excludes.h"
#include "server/workspace/review/path_rules.h"

namespace lockroom::workspace::snapshot {
namespace {

constexpr int kMaxDepth = 256;  // deeper directories are reported, not walked (and one fd per level)

// One repository's view of part of the tree: its ignore rules and its index (read, never written).
struct RepoContext {
  RepoPtr repo;
  IndexPtr index;  // null when nothing is tracked (a workspace outside any repository)
};

struct DirCloser {
  void operator()(DIR* d) const noexcept { closedir(d); }
};

std::string errno_text(int err) { return std::strerror(err); }

std::string special_file_reason(mode_t mode) {
  if (S_ISSOCK(mode)) return "socket: not something git can store";
  if (S_ISFIFO(mode)) return "named pipe (FIFO): not something git can store";
  if (S_ISCHR(mode)) return "character device: not something git can store";
  if (S_ISBLK(mode)) return "block device: not something git can store";
  return "unknown file type: not something git can store";
}

// Why the review could not take `ws_path` back from the guest, or nullopt. Every path a guest
// lists must pass review::path_problem(); a host name that does not (a control character such
// as macOS's "Icon\r", bytes that are not UTF-8, a ".GIT" folder, an overlong path) would come
// back as a refusal and a phantom deletion on every review, so it is left out here, by name.
// Its parents passed on the way down: only the last component `name` and the length are new.
std::optional<std::string> unreviewable(std::string_view name, const std::string& ws_path) {
  auto problem = review::path_problem(ws_path.size() > review::kMaxPathBytes ? std::string_view(ws_path) : name);
  if (!problem) return std::nullopt;
  return "its name cannot come back from a sandbox: " + *problem +
         " (lockroom refuses such names in a sandbox's changes; rename it to take it in)";
}

Result<RepoContext> open_repo_context(RepoPtr repo) {
  git_index* index = nullptr;
  if (int rc = git_repository_index(&index, repo.get()); rc < 0) {
    return make_error(ErrorCode::kUnavailable, git_error_text("cannot read the git index of the workspace", rc));
  }
  return RepoContext{std::move(repo), IndexPtr(index)};
}

// A nested repository (submodule or embedded clone) at `dir`, or nothing if it cannot be opened
// as one; its files are then walked with the enclosing repository's rules.
std::optional<RepoContext> open_nested_repo(const std::string& dir) {
  git_repository* raw = nullptr;
  if (git_repository_open_ext(&raw, dir.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr) < 0) return std::nullopt;
  RepoPtr repo(raw);
  if (git_repository_is_bare(repo.get())) return std::nullopt;
  auto ctx = open_repo_context(std::move(repo));
  if (!ctx) return std::nullopt;
  return std::move(ctx).value();
}

void read_head(git_repository* repo, WorkspaceGitInfo& info) {
  git_reference* raw = nullptr;
  int rc = git_repository_head(&raw, repo);
  ReferencePtr head(raw);
  if (rc == 0) {
    git_object* peeled = nullptr;
    if (git_reference_peel(&peeled, head.get(), GIT_OBJECT_COMMIT) == 0) {
      char hex[GIT_OID_HEXSZ + 1];
      git_oid_tostr(hex, sizeof hex, git_object_id(peeled));
      info.head_commit = hex;
      git_object_free(peeled);
    }
    if (git_reference_is_branch(head.get())) info.branch = git_reference_shorthand(head.get());
    return;
  }
  if (rc == GIT_EUNBORNBRANCH) {  // a new repository: HEAD names a branch with no commit yet
    git_reference* symbolic = nullptr;
    if (git_reference_lookup(&symbolic, repo, "HEAD") == 0) {
      ReferencePtr owned(symbolic);
      if (const char* target = git_reference_symbolic_target(owned.get())) {
        std::string_view name = target;
        constexpr std::string_view kHeads = "refs/heads/";
        if (name.substr(0, kHeads.size()) == kHeads) info.branch = std::string(name.substr(kHeads.size()));
      }
    }
  }
}

class Scanner {
 public:
  Scanner(const SecretFilter& secrets, const struct stat& store, std::uint64_t max_entries)
      : secrets_(secrets), store_(store), max_entries_(max_entries) {}

  // Walks the directory open on `fd` (taken over). `ws_rel` and `repo_rel` are the directory's
  // path relative to the workspace and to ctx's working directory, "" or ending in '/';
  // `secret_folder` is the secret filter's verdict on the directory (and its parents).
  Result<void> walk(int fd, const std::string& abs_dir, const std::string& ws_rel, RepoContext& ctx,
                    const std::string& repo_rel, int depth, const SecretFilter::FolderMatches& secret_folder);

  ScanResult result;

 private:
  Result<bool> ignored(RepoContext& ctx, const std::string& repo_path) {
    int ignored = 0;
    if (int rc = git_ignore_path_is_ignored(&ignored, ctx.repo.get(), repo_path.c_str()); rc < 0) {
      return make_error(ErrorCode::kInternal, git_error_text("cannot evaluate the ignore rules for " + repo_path, rc));
    }
    return ignored != 0;
  }

  static bool tracked(const RepoContext& ctx, const std::string& repo_path) {
    std::size_t at = 0;
    return ctx.index && git_index_find(&at, ctx.index.get(), repo_path.c_str()) == 0;
  }

  // A tracked entry at `repo_dir` (a gitlink) or anywhere under it.
  static bool tracked_under(const RepoContext& ctx, const std::string& repo_dir) {
    std::size_t at = 0;
    return tracked(ctx, repo_dir) ||
           (ctx.index && git_index_find_prefix(&at, ctx.index.get(), (repo_dir + "/").c_str()) == 0);
  }

  Result<void> visit_directory(int parent_fd, const char* name, const struct stat& st, const std::string& abs_dir,
                               const std::string& ws_path, RepoContext& ctx, const std::string& repo_path, int depth,
                               const SecretFilter::FolderMatches& secret_folder);

  const SecretFilter& secrets_;
  // The components of the workspace-relative path being looked at: views into the walk's own
  // path strings, pushed and popped as it goes down and up.
  std::vector<std::string_view> components_;
  struct stat store_;
  std::uint64_t max_entries_;
};

Result<void> Scanner::walk(int fd, const std::string& abs_dir, const std::string& ws_rel, RepoContext& ctx,
                           const std::string& repo_rel, int depth, const SecretFilter::FolderMatches& secret_folder) {
  std::unique_ptr<DIR, DirCloser> dir(fdopendir(fd));
  if (!dir) {
    int err = errno;
    close(fd);
    result.skipped.push_back({ws_rel, "directory cannot be read: " + errno_text(err)});
    return {};
  }
  const int dir_fd = dirfd(dir.get());
  while (!result.stopped_early) {
    errno = 0;
    const dirent* de = readdir(dir.get());
    if (!de) {
      if (errno != 0) result.skipped.push_back({ws_rel, "directory cannot be read: " + errno_text(errno)});
      break;
    }
    const char* name = de->d_name;
    if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0 || std::strcmp(name, ".git") == 0) continue;

    struct stat st {};
    if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT) result.skipped.push_back({ws_rel + name, "cannot be examined: " + errno_text(errno)});
      continue;  // ENOENT: deleted while we looked
    }
    const std::string ws_path = ws_rel + name;
    const std::string repo_path = repo_rel + name;

    if (S_ISDIR(st.st_mode)) {
      if (auto r = visit_directory(dir_fd, name, st, abs_dir, ws_path, ctx, repo_path, depth, secret_folder); !r) {
        return r;
      }
      continue;
    }
    if (!tracked(ctx, repo_path)) {
      auto is_ignored = ignored(ctx, repo_path);
      if (!is_ignored) return is_ignored.error();
      if (*is_ignored) continue;
    }
    if (auto problem = unreviewable(name, ws_path)) {
      result.skipped.push_back({review::printable(ws_path, review::kMaxPathBytes), std::move(*problem)});
      continue;
    }
    if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
      result.skipped.push_back({ws_path, special_file_reason(st.st_mode)});
      continue;
    }
    components_.push_back(std::string_view(ws_path).substr(ws_rel.size()));
    const bool secret = secrets_.withheld_in(secret_folder, components_);
    components_.pop_back();
    if (secret) {
      result.withheld.push_back(ws_path);
      continue;
    }
    ScannedEntry entry;
    entry.path = ws_path;
    entry.kind = S_ISLNK(st.st_mode) ? EntryKind::kSymlink
                 : (st.st_mode & S_IXUSR) ? EntryKind::kExecutable
                                           : EntryKind::kFile;
    entry.size = static_cast<std::uint64_t>(st.st_size);
    entry.stat = st;
    result.entries.push_back(std::move(entry));
    if (result.entries.size() > max_entries_) result.stopped_early = true;
  }
  return {};
}

Result<void> Scanner::visit_directory(int parent_fd, const char* name, const struct stat& st,
                                      const std::string& abs_dir, const std::string& ws_path, RepoContext& ctx,
                                      const std::string& repo_path, int depth,
                                      const SecretFilter::FolderMatches& secret_folder) {
  if (st.st_dev == store_.st_dev && st.st_ino == store_.st_ino) return {};  // lockroom's own store
  if (!tracked_under(ctx, repo_path)) {
    auto is_ignored = ignored(ctx, repo_path + "/");
    if (!is_ignored) return is_ignored.error();
    if (*is_ignored) return {};
  }
  if (auto problem = unreviewable(name, ws_path)) {
    result.skipped.push_back({review::printable(ws_path, review::kMaxPathBytes) + "/", std::move(*problem)});
    return {};
  }
  if (depth >= kMaxDepth) {
    result.skipped.push_back({ws_path + "/", "more than " + std::to_string(kMaxDepth) + " directories deep"});
    return {};
  }
  int sub_fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (sub_fd < 0) {
    if (errno != ENOENT) result.skipped.push_back({ws_path + "/", "directory cannot be opened: " + errno_text(errno)});
    return {};
  }
  const std::string abs = abs_dir + "/" + name;
  const std::string ws_dir = ws_path + "/";
  components_.push_back(std::string_view(ws_path).substr(ws_path.size() - std::strlen(name)));
  const SecretFilter::FolderMatches sub_secret_folder = secrets_.enter_folder(secret_folder, components_);
  Result<void> walked;
  struct stat dot_git {};
  std::optional<RepoContext> nested;
  if (fstatat(sub_fd, ".git", &dot_git, AT_SYMLINK_NOFOLLOW) == 0) nested = open_nested_repo(abs);
  if (nested) {
    walked = walk(sub_fd, abs, ws_dir, *nested, "", depth + 1, sub_secret_folder);
  } else {
    walked = walk(sub_fd, abs, ws_dir, ctx, repo_path + "/", depth + 1, sub_secret_folder);
  }
  components_.pop_back();
  return walked;
}

// The repository whose rules apply at the workspace root: the user's (found by searching upward,
// as git does) or, outside any repository, lockroom's store with the workspace as its working
// directory (in memory only) so that .gitignore files and global excludes still apply.
Result<RepoContext> root_context(const std::string& workspace, const std::string& store_dir, WorkspaceGitInfo& info) {
  git_repository* raw = nullptr;
  int rc = git_repository_open_ext(&raw, workspace.c_str(), 0, nullptr);
  RepoPtr repo(raw);
  if (rc == 0 && !git_repository_is_bare(repo.get())) {
    char* real_workdir = realpath(git_repository_workdir(repo.get()), nullptr);
    std::string workdir = real_workdir ? real_workdir : "";
    std::free(real_workdir);
    const std::string inside = workspace + "/";
    if (!workdir.empty() && (workdir == workspace || inside.compare(0, workdir.size() + 1, workdir + "/") == 0)) {
      info.is_git_repo = true;
      info.prefix = workdir == workspace ? "" : inside.substr(workdir.size() + 1);
      read_head(repo.get(), info);
      return open_repo_context(std::move(repo));
    }
  } else if (rc < 0 && rc != GIT_ENOTFOUND) {
    return make_error(ErrorCode::kUnavailable,
                      git_error_text("cannot open the git repository of the workspace " + workspace, rc));
  }

  raw = nullptr;
  if (int orc = git_repository_open_bare(&raw, store_dir.c_str()); orc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot open the snapshot store " + store_dir, orc));
  }
  RepoPtr store(raw);
  if (int wrc = git_repository_set_workdir(store.get(), workspace.c_str(), 0); wrc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot apply ignore rules to " + workspace, wrc));
  }
  return RepoContext{std::move(store), nullptr};
}

}  // namespace

Result<ScanResult> scan_workspace(const std::string& workspace, const std::string& store_dir,
                                  const SecretFilter& secrets, std::uint64_t max_entries) {
  ensure_libgit2();
  struct stat store {};
  if (stat(store_dir.c_str(), &store) != 0) store = {};

  WorkspaceGitInfo git;
  auto ctx = root_context(workspace, store_dir, git);
  if (!ctx) return ctx.error();
  git.guest_excludes = guest_excludes(git.is_git_repo ? ctx->repo.get() : nullptr, git.prefix);

  int fd = open(workspace.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return make_error(ErrorCode::kNotFound, "cannot open the workspace directory " + workspace + ": " + errno_text(errno));
  }
  Scanner scanner(secrets, store, max_entries);
  if (auto r = scanner.walk(fd, workspace, "", *ctx, git.prefix, 0, SecretFilter::FolderMatches{}); !r) {
    return r.error();
  }

  ScanResult out = std::move(scanner.result);
  out.git = std::move(git);
  std::sort(out.entries.begin(), out.entries.end(),
            [](const ScannedEntry& a, const ScannedEntry& b) { return a.path < b.path; });
  std::sort(out.withheld.begin(), out.withheld.end());
  std::sort(out.skipped.begin(), out.skipped.end(),
            [](const SkippedEntry& a, const SkippedEntry& b) { return a.path < b.path; });
  return out;
}

}  // namespace lockroom::workspace::snapshot
