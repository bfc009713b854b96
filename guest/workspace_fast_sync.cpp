// fast_sync(); see workspace_fast_sync.h.
#include "guest/workspace_fast_sync.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <map>

#include "guest/workspace_index.h"
#include "guest/workspace_index_file.h"
#include "guest/workspace_objects.h"
#include "guest/write_all.h"

namespace lockroom::agent {

namespace channel = protocol::channel;
namespace agent_error = channel::agent_error;

namespace {

constexpr std::uint32_t kTreeMode = 040000;
constexpr long kMaxDepth = 256;  // folders deep

std::string raw_from_hex(const std::string& hex) {
  std::string raw(20, '\0');
  for (std::size_t i = 0; i < 20; ++i) raw[i] = static_cast<char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  return raw;
}

bool is_file_mode(std::uint32_t mode) { return mode == channel::kModeFile || mode == channel::kModeExecutable || mode == channel::kModeSymlink; }

// One path that differs between BASE and COMMIT; mode 0 where a side has nothing.
struct Change {
  std::string path;
  std::uint32_t old_mode = 0, new_mode = 0;
  std::string old_id, new_id;  // raw
};

// The file-level differences between two trees; false when a path changes between file and
// folder, a submodule is involved, an object cannot be read, or there are too many.
class TreeDiff {
 public:
  explicit TreeDiff(ObjectReader& reader) : reader_(reader) {}
  std::vector<Change> changes;

  bool diff(const std::string& old_tree, const std::string& new_tree, const std::string& prefix) {
    if (old_tree == new_tree) return true;
    if (std::count(prefix.begin(), prefix.end(), '/') > kMaxDepth) return false;  // objects the guest made up
    auto a = entries(old_tree), b = entries(new_tree);
    if (!a || !b) return false;
    std::map<std::string, const TreeEntry*> olds, news;
    for (const auto& e : *a) olds[e.name] = &e;
    for (const auto& e : *b) news[e.name] = &e;
    for (const auto& [name, o] : olds) {
      auto it = news.find(name);
      if (!side(prefix + name, o, it == news.end() ? nullptr : it->second)) return false;
    }
    for (const auto& [name, n] : news)
      if (!olds.count(name) && !side(prefix + name, nullptr, n)) return false;
    return true;
  }

 private:
  std::optional<std::vector<TreeEntry>> entries(const std::string& id) {
    auto o = reader_.read(id);
    if (!o || o->type != ObjectType::kTree) return std::nullopt;
    return parse_tree(o->data);
  }
  // Every file under the tree `id` as added (or removed) at `prefix`.
  bool all(const std::string& id, const std::string& prefix, bool added) {
    if (std::count(prefix.begin(), prefix.end(), '/') > kMaxDepth) return false;
    auto list = entries(id);
    if (!list) return false;
    for (const auto& e : *list) {
      if (e.mode == kTreeMode) {
        if (!all(e.raw_id, prefix + e.name + "/", added)) return false;
      } else if (!is_file_mode(e.mode)) {
        return false;
      } else if (!add(added ? Change{prefix + e.name, 0, e.mode, {}, e.raw_id} : Change{prefix + e.name, e.mode, 0, e.raw_id, {}})) {
        return false;
      }
    }
    return true;
  }
  bool side(const std::string& path, const TreeEntry* o, const TreeEntry* n) {
    if (o && n && o->mode == n->mode && o->raw_id == n->raw_id) return true;
    bool old_tree = o && o->mode == kTreeMode, new_tree = n && n->mode == kTreeMode;
    if ((o && !old_tree && !is_file_mode(o->mode)) || (n && !new_tree && !is_file_mode(n->mode))) return false;  // submodules
    if (o && n && old_tree != new_tree) return false;  // a file becomes a folder or back: git's job
    if (old_tree && new_tree) return diff(o->raw_id, n->raw_id, path + "/");
    if (old_tree) return all(o->raw_id, path + "/", false);
    if (new_tree) return all(n->raw_id, path + "/", true);
    return add(Change{path, o ? o->mode : 0, n ? n->mode : 0, o ? o->raw_id : std::string(), n ? n->raw_id : std::string()});
  }
  bool add(Change c) {
    if (changes.size() >= kMaxFastSyncPaths) return false;
    changes.push_back(std::move(c));
    return true;
  }

  ObjectReader& reader_;
};

// The id and mode of what is on disk at `path` (a regular file or symlink), or nullopt when
// there is nothing there (or something else).
struct OnDisk {
  std::uint32_t mode = 0;
  std::string raw_id;
};
std::optional<OnDisk> on_disk(int dir, const std::string& path, const struct stat& st) {
  BlobHasher hasher;
  if (S_ISLNK(st.st_mode)) {
    char target[channel::kMaxPath];
    ssize_t n = ::readlinkat(dir, path.c_str(), target, sizeof target);
    if (n < 0) return std::nullopt;
    hasher.begin(static_cast<std::uint64_t>(n));
    hasher.update(std::string_view(target, static_cast<std::size_t>(n)));
    return OnDisk{channel::kModeSymlink, hasher.finish_raw()};
  }
  if (!S_ISREG(st.st_mode)) return std::nullopt;
  struct stat hashed = st;
  auto raw = hash_regular(dir, path, hasher, hashed);
  if (!raw) return std::nullopt;
  return OnDisk{(hashed.st_mode & S_IXUSR) ? channel::kModeExecutable : channel::kModeFile, *raw};
}

// Whether every folder above `path` is a real folder or missing (then made when writing).
bool parents_plain(int dir, const std::string& path) {
  for (std::size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    struct stat st{};
    if (::fstatat(dir, path.substr(0, slash).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return errno == ENOENT;
    if (!S_ISDIR(st.st_mode)) return false;
  }
  return true;
}

// The value of refs/heads/<branch> (40 hex), "" when the branch does not exist, nullopt when it
// is not a plain ref this code should move.
std::optional<std::string> read_branch(const std::string& git_dir, const std::string& branch) {
  std::string loose = git_dir + "/refs/heads/" + branch;
  if (auto text = read_regular_file(loose, 64, false)) {
    if (text->size() < 41 || (*text)[40] != '\n' || !channel::is_object_id(text->substr(0, 40))) return std::nullopt;
    return text->substr(0, 40);
  }
  struct stat st{};
  if (::lstat(loose.c_str(), &st) == 0) return std::nullopt;  // a folder, a symlink: leave it to git
  auto packed = read_regular_file(git_dir + "/packed-refs", 64u << 20, true);
  if (!packed) return std::string();
  std::string needle = " refs/heads/" + branch + "\n";
  for (std::size_t at = packed->find(needle); at != std::string::npos; at = packed->find(needle, at + 1))
    if (at >= 40 && (at == 40 || (*packed)[at - 41] == '\n')) return packed->substr(at - 40, 40);
  return std::string();
}

bool make_parents(int dir, const std::string& path) {
  for (std::size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1))
    if (::mkdirat(dir, path.substr(0, slash).c_str(), 0777) != 0 && errno != EEXIST) return false;
  return true;
}

// Removes the folders above `path` that are now empty, as git does.
void remove_empty_parents(int dir, std::string path) {
  for (std::size_t slash = path.rfind('/'); slash != std::string::npos; slash = path.rfind('/')) {
    path.resize(slash);
    if (::unlinkat(dir, path.c_str(), AT_REMOVEDIR) != 0) return;
  }
}

// Writes `content` at `path` (a new file replaces the old one by rename), or a symlink.
bool write_entry(int dir, const std::string& path, std::uint32_t mode, const std::string& content) {
  if (!make_parents(dir, path)) return false;
  std::string temp = path + ".lockroom-sync-" + std::to_string(::getpid());
  ::unlinkat(dir, temp.c_str(), 0);
  if (mode == channel::kModeSymlink) {
    if (::symlinkat(content.c_str(), dir, temp.c_str()) != 0) return false;
  } else {
    int fd = ::openat(dir, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode == channel::kModeExecutable ? 0777 : 0666);
    if (fd < 0) return false;
    bool written = write_all(fd, content);
    bool ok = ::close(fd) == 0 && written;
    if (!ok) {
      ::unlinkat(dir, temp.c_str(), 0);
      return false;
    }
  }
  if (::renameat(dir, temp.c_str(), dir, path.c_str()) != 0) {
    ::unlinkat(dir, temp.c_str(), 0);
    return false;
  }
  return true;
}

// Moves refs/heads/<branch> from `old_hex` ("" when new) to `new_hex` under its lock, with a
// reflog line where git keeps one.
bool move_branch(const std::string& git_dir, const std::string& branch, const std::string& old_hex, const std::string& new_hex) {
  std::string ref = git_dir + "/refs/heads/" + branch, lock = ref + ".lock";
  for (std::size_t slash = ref.find('/', git_dir.size() + 1); slash != std::string::npos; slash = ref.find('/', slash + 1))
    ::mkdir(ref.substr(0, slash).c_str(), 0777);
  int fd = ::open(lock.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return false;
  std::string line = new_hex + "\n";
  bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(lock.c_str(), ref.c_str()) != 0) {
    ::unlink(lock.c_str());
    return false;
  }
  std::string log_line = (old_hex.empty() ? std::string(40, '0') : old_hex) + " " + new_hex + " lockroom <lockroom@localhost> " +
                         std::to_string(std::time(nullptr)) + " +0000\tlockroom: sync\n";
  for (const std::string& log : {git_dir + "/logs/refs/heads/" + branch, git_dir + "/logs/HEAD"}) {
    int lf = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
    if (lf < 0) continue;
    (void)!::write(lf, log_line.data(), log_line.size());
    ::close(lf);
  }
  return true;
}

// The index lock: taken before anything is read, dropped unless committed.
class IndexLock {
 public:
  explicit IndexLock(std::string index) : index_(std::move(index)), lock_(index_ + ".lock") {
    fd_ = ::open(lock_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  }
  ~IndexLock() {
    if (fd_ >= 0) {
      ::close(fd_);
      ::unlink(lock_.c_str());
    }
  }
  bool held() const { return fd_ >= 0; }
  bool commit(const std::string& bytes) {
    if (!write_all(fd_, bytes)) return false;
    if (::close(fd_) != 0) {
      fd_ = -1;
      ::unlink(lock_.c_str());
      return false;
    }
    fd_ = -1;
    if (::rename(lock_.c_str(), index_.c_str()) != 0) {
      ::unlink(lock_.c_str());
      return false;
    }
    return true;
  }

 private:
  std::string index_, lock_;
  int fd_ = -1;
};

struct Plan {
  const Change* change;
  bool write = false;   // the new version goes to disk (else it is there already, or the path goes)
  bool remove = false;  // the file goes from disk
};

}  // namespace

std::optional<Outcome> fast_sync(const channel::WorkspaceCheckoutParams& p, StatCache& cache, FastSyncStats* stats) {
  auto started = std::chrono::steady_clock::now();
  if (!p.base) return std::nullopt;
  const std::string git_dir = p.path + "/.git";
  struct stat st{};
  if (::lstat(git_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return std::nullopt;
  auto head = read_regular_file(git_dir + "/HEAD", 512, false);
  if (!head || *head != "ref: refs/heads/" + p.branch + "\n") return std::nullopt;
  auto branch_at = read_branch(git_dir, p.branch);
  if (!branch_at) return std::nullopt;

  ObjectReader reader(git_dir);
  std::string commit_raw = raw_from_hex(p.commit), base_raw = raw_from_hex(*p.base);
  auto commit = reader.read(commit_raw), base = reader.read(base_raw);
  if (!commit || !base || commit->type != ObjectType::kCommit || base->type != ObjectType::kCommit) return std::nullopt;
  auto new_tree = commit_tree(commit->data), old_tree = commit_tree(base->data);
  if (!new_tree || !old_tree) return std::nullopt;
  TreeDiff diff(reader);
  if (!diff.diff(*old_tree, *new_tree, "")) return std::nullopt;

  IndexLock lock(git_dir + "/index");
  if (!lock.held()) return std::nullopt;  // git runs in the guest: let git report it
  auto index = read_index_file(git_dir + "/index");
  if (!index) return std::nullopt;
  int dir = ::open(p.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return std::nullopt;
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{dir};

  // Every changed path must be clean; then what to do with it.
  std::vector<Plan> plans;
  for (const Change& c : diff.changes) {
    if (channel::workspace_path_problem(c.path) != "" || !parents_plain(dir, c.path)) return std::nullopt;
    const IndexFileEntry* entry = index->find(c.path);
    if (c.old_mode == 0 && index->has_below(c.path)) return std::nullopt;  // staged files under a path that becomes a file
    bool index_old = c.old_mode ? entry && entry->mode == c.old_mode && entry->raw_id == c.old_id : !entry;
    bool index_new = c.new_mode ? entry && entry->mode == c.new_mode && entry->raw_id == c.new_id : !entry;
    if (!index_old && !index_new) return std::nullopt;  // staged changes: git's conflict report
    struct stat disk{};
    bool present = ::fstatat(dir, c.path.c_str(), &disk, AT_SYMLINK_NOFOLLOW) == 0;
    if (!present && errno != ENOENT) return std::nullopt;
    if (present && !S_ISREG(disk.st_mode) && !S_ISLNK(disk.st_mode)) return std::nullopt;
    std::optional<OnDisk> seen;
    if (present && !(entry && index->clean(*entry, disk, StatCache::kRacyMarginNs))) {
      seen = on_disk(dir, c.path, disk);
      if (!seen) return std::nullopt;
    } else if (present) {
      seen = OnDisk{entry->mode, entry->raw_id};
    }
    bool disk_old = c.old_mode ? seen && seen->mode == c.old_mode && seen->raw_id == c.old_id : !present;
    bool disk_new = c.new_mode ? seen && seen->mode == c.new_mode && seen->raw_id == c.new_id : !present;
    if (disk_new) {
      plans.push_back({&c, false, false});  // applied already (or the path is gone already)
    } else if (disk_old && index_old) {
      plans.push_back({&c, c.new_mode != 0, c.new_mode == 0});
    } else {
      return std::nullopt;  // local edits in the way
    }
  }

  // Apply: the worktree, then the index, then the branch. Entries that were racily clean in the
  // old index would look clean against the new one: each is checked against its file first (kept
  // when the file still holds its blob, smudged when not), as git does.
  index->settle_racy(StatCache::kRacyMarginNs, [&](const IndexFileEntry& e) {
    struct stat now{};
    if (::fstatat(dir, e.path.c_str(), &now, AT_SYMLINK_NOFOLLOW) != 0) return false;
    if (e.mtime_s != static_cast<std::uint32_t>(now.st_mtim.tv_sec) || e.mtime_ns != static_cast<std::uint32_t>(now.st_mtim.tv_nsec) ||
        e.size != static_cast<std::uint32_t>(now.st_size) || e.ino != static_cast<std::uint32_t>(now.st_ino))
      return false;
    auto seen = on_disk(dir, e.path, now);
    return seen && seen->mode == e.mode && seen->raw_id == e.raw_id;
  });
  std::int64_t written_at = realtime_ns();
  std::size_t written = 0;
  for (const Plan& plan : plans) {
    const Change& c = *plan.change;
    if (plan.remove) {
      if (::unlinkat(dir, c.path.c_str(), 0) != 0 && errno != ENOENT) return errno_error(errno, "workspace.checkout: removing " + c.path);
      remove_empty_parents(dir, c.path);
      ++written;
    } else if (plan.write) {
      auto blob = reader.read(c.new_id);
      if (!blob || blob->type != ObjectType::kBlob)
        return make_rpc_error(agent_error::kIoError, "workspace.checkout: blob " + channel::id_to_hex(c.new_id) + " for " + c.path + " cannot be read");
      if (!write_entry(dir, c.path, c.new_mode, blob->data)) return errno_error(errno, "workspace.checkout: writing " + c.path);
      ++written;
    }
    if (c.new_mode == 0) {
      index->remove(c.path);
      continue;
    }
    struct stat now{};
    if (::fstatat(dir, c.path.c_str(), &now, AT_SYMLINK_NOFOLLOW) != 0) return errno_error(errno, "workspace.checkout: " + c.path);
    index->put(c.path, c.new_mode, c.new_id, now);
    if (S_ISREG(now.st_mode)) cache.store(c.path, stat_key(now), c.new_id, written_at);
  }
  if (!lock.commit(index->serialize())) return errno_error(errno, "workspace.checkout: writing " + git_dir + "/index");

  channel::WorkspaceCheckoutResult result;
  result.commit = p.commit;
  result.branch = p.branch;
  if (*branch_at == *p.base || branch_at->empty()) {
    if (!move_branch(git_dir, p.branch, *branch_at, p.commit))
      return errno_error(errno, "workspace.checkout: moving refs/heads/" + p.branch + " to " + p.commit);
    result.branch_moved = true;
  }
  result.files = static_cast<std::int64_t>(index->size());
  if (stats) {
    stats->changed = diff.changes.size();
    stats->written = written;
    stats->ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
  }
  return channel::to_json(result);
}

}  // namespace lockroom::agent
