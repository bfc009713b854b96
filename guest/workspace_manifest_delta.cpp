// update_manifest; see workspace_manifest_delta.h.
#include "guest/workspace_manifest_delta.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "guest/workspace_history.h"

namespace lockroom::agent {

namespace channel = protocol::channel;

namespace {

// A folder that is not a repository of its own (no ".git" in it): git lists a nested
// repository as one folder entry, and does not look inside.
bool not_a_repository(int root, const std::string& folder) {
  struct stat st{};
  return ::fstatat(root, (folder + "/.git").c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0;
}

const channel::ManifestEntry* listed(const std::vector<channel::ManifestEntry>& entries, const std::string& path) {
  auto it = std::lower_bound(entries.begin(), entries.end(), path, [](const channel::ManifestEntry& e, const std::string& p) { return e.path < p; });
  return it != entries.end() && it->path == path ? &*it : nullptr;
}

}  // namespace

std::variant<Manifest, RpcError> update_manifest(const std::string& root, const channel::WorkspaceBounds& bounds, StatCache& cache,
                                                 const std::vector<channel::ManifestEntry>& previous, const WatchedNames& names,
                                                 const std::optional<channel::InlineBounds>& capture, EarlierHashes* earlier, bool* relist) {
  const std::string what = "workspace.manifest: " + root;
  *relist = false;
  std::int64_t started = realtime_ns();
  int dir = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return errno_error(errno, what);
  Manifest m;
  if (capture) m.captured = ContentCapture(*capture);
  m.listed_by_git = false;
  m.changes_only = true;
  for (const auto& old : previous) {  // the whole's bytes and counts, as if each entry were listed again
    if (old.size <= channel::max_entry_size(old.mode, bounds)) m.bytes += static_cast<std::int64_t>(old.size);
    if (old.mode != channel::kModeSymlink) m.cached++;  // its id known, as from the stat cache
  }
  std::int64_t count = static_cast<std::int64_t>(previous.size());
  BlobHasher hasher;
  KnownIds known{cache, nullptr, earlier};
  std::set<std::string> looked_at = names.dirty;
  looked_at.insert(names.touched.begin(), names.touched.end());
  std::vector<std::string> maybe_new;  // come since, not listed before: listed unless git ignores them
  FolderCheck outside_nested(dir, not_a_repository);
  for (const auto& path : looked_at) {
    const channel::ManifestEntry* old = listed(previous, path);
    struct stat st{};
    bool is_file = ::fstatat(dir, path.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode));
    if (!old) {
      // Written but not listed: ignored, and still so (the rules did not change). Come: asked.
      if (is_file && names.touched.count(path) && channel::workspace_path_problem(path).empty()) {
        if (!outside_nested.all_pass(path)) {
          ::close(dir);
          *relist = true;  // git lists a nested repository as one folder: only a listing tells
          return m;
        }
        maybe_new.push_back(path);
      }
      continue;
    }
    if (old->size <= channel::max_entry_size(old->mode, bounds)) m.bytes -= static_cast<std::int64_t>(old->size);
    if (old->mode != channel::kModeSymlink) m.cached--;
    std::optional<channel::ManifestEntry> e;
    if (is_file) {
      e = describe_file(dir, path, st, bounds, known, hasher, started, m);
    } else {
      m.skipped++;
    }
    if (!e) {
      m.entries.push_back(removal_record(path));
      count--;
      continue;
    }
    if (e->size <= channel::max_entry_size(e->mode, bounds)) m.bytes += static_cast<std::int64_t>(e->size);
    if (e->mode != old->mode || e->id != old->id || e->size != old->size) m.entries.push_back(std::move(*e));
  }
  if (!maybe_new.empty()) {
    auto ignored = names.ignored(maybe_new);
    if (!ignored) {
      ::close(dir);
      *relist = true;  // git could not say: a listing will
      return m;
    }
    for (const auto& path : maybe_new) {
      if (ignored->count(path)) continue;
      struct stat st{};
      if (::fstatat(dir, path.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !(S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))) continue;
      auto e = describe_file(dir, path, st, bounds, known, hasher, started, m);
      if (!e) continue;
      if (e->size <= channel::max_entry_size(e->mode, bounds)) m.bytes += static_cast<std::int64_t>(e->size);
      m.entries.push_back(std::move(*e));
      count++;
    }
    std::sort(m.entries.begin(), m.entries.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  }
  ::close(dir);
  if (count > bounds.max_entries) {
    std::vector<std::string> paths;
    paths.reserve(previous.size());
    for (const auto& e : previous) paths.push_back(e.path);
    return make_rpc_error(channel::agent_error::kLimitReached, what + " has " + std::to_string(count) + " files; the limit is " +
                                                                  std::to_string(bounds.max_entries) + ". Most are in " + biggest_folders(paths));
  }
  if (m.bytes > bounds.max_total_bytes)
    return make_rpc_error(channel::agent_error::kTooLarge, what + " holds " + std::to_string(m.bytes) + " bytes in " + std::to_string(count) +
                                                               " files; the limit is " + std::to_string(bounds.max_total_bytes));
  return m;
}

}  // namespace lockroom::agent
