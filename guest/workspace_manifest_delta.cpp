// update_manifest and manifest_delta; see workspace_manifest_delta.h.
#include "guest/workspace_manifest_delta.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace lockroom::agent {

namespace channel = protocol::channel;

std::variant<Manifest, RpcError> update_manifest(const std::string& root, const channel::WorkspaceBounds& bounds, StatCache& cache,
                                                 const std::vector<channel::ManifestEntry>& previous, const std::set<std::string>& dirty,
                                                 const std::optional<channel::InlineBounds>& capture) {
  const std::string what = "workspace.manifest: " + root;
  std::int64_t started = realtime_ns();
  // The same paths as before: the count bound as a whole listing checks it (the host's may differ).
  if (static_cast<std::int64_t>(previous.size()) > bounds.max_entries) {
    std::vector<std::string> paths;
    paths.reserve(previous.size());
    for (const auto& e : previous) paths.push_back(e.path);
    return make_rpc_error(channel::agent_error::kLimitReached, what + " has " + std::to_string(paths.size()) + " files; the limit is " +
                                                                  std::to_string(bounds.max_entries) + ". Most are in " + biggest_folders(paths));
  }
  int dir = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return errno_error(errno, what);
  Manifest m;
  if (capture) m.captured = ContentCapture(*capture);
  m.listed_by_git = false;
  m.entries.reserve(previous.size());
  BlobHasher hasher;
  auto next_dirty = dirty.begin();
  for (const auto& old : previous) {
    while (next_dirty != dirty.end() && *next_dirty < old.path) ++next_dirty;  // not listed before: still not listed
    if (next_dirty == dirty.end() || *next_dirty != old.path) {
      if (old.size <= channel::max_entry_size(old.mode, bounds)) m.bytes += static_cast<std::int64_t>(old.size);
      m.entries.push_back(old);
      if (old.mode != channel::kModeSymlink) m.cached++;  // its id known, as from the stat cache
      continue;
    }
    struct stat st{};
    if (::fstatat(dir, old.path.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !(S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))) {
      m.skipped++;
      continue;
    }
    auto e = describe_file(dir, old.path, st, bounds, cache, nullptr, hasher, started, m);
    if (!e) continue;
    if (e->size <= channel::max_entry_size(e->mode, bounds)) m.bytes += static_cast<std::int64_t>(e->size);
    m.entries.push_back(std::move(*e));
  }
  ::close(dir);
  if (m.bytes > bounds.max_total_bytes)
    return make_rpc_error(channel::agent_error::kTooLarge, what + " holds " + std::to_string(m.bytes) + " bytes in " + std::to_string(m.entries.size()) +
                                                               " files; the limit is " + std::to_string(bounds.max_total_bytes));
  return m;
}

std::vector<channel::ManifestEntry> manifest_delta(const std::vector<channel::ManifestEntry>& before, const std::vector<channel::ManifestEntry>& now) {
  std::vector<channel::ManifestEntry> out;
  auto a = before.begin();
  auto b = now.begin();
  auto removed = [](const std::string& path) {
    channel::ManifestEntry r;
    r.path = path;
    r.mode = channel::kModeRemoved;
    r.id = std::string(40, '0');
    r.size = 0;
    return r;
  };
  while (a != before.end() || b != now.end()) {
    if (b == now.end() || (a != before.end() && a->path < b->path)) {
      out.push_back(removed(a->path));
      ++a;
    } else if (a == before.end() || b->path < a->path) {
      out.push_back(*b++);
    } else {
      if (a->mode != b->mode || a->id != b->id || a->size != b->size) out.push_back(*b);
      ++a;
      ++b;
    }
  }
  return out;
}

}  // namespace lockroom::agent
