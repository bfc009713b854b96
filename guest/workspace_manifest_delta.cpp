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

std::variant<Manifest, RpcError> update_manifest(const std::string& root, const channel::WorkspaceBounds& bounds, StatCache& cache,
                                                 const std::vector<channel::ManifestEntry>& previous, const std::set<std::string>& dirty,
                                                 const std::optional<channel::InlineBounds>& capture, EarlierHashes* earlier) {
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
  m.changes_only = true;
  for (const auto& old : previous) {  // the whole's bytes and counts, as if each entry were listed again
    if (old.size <= channel::max_entry_size(old.mode, bounds)) m.bytes += static_cast<std::int64_t>(old.size);
    if (old.mode != channel::kModeSymlink) m.cached++;  // its id known, as from the stat cache
  }
  BlobHasher hasher;
  KnownIds known{cache, nullptr, earlier};
  for (const auto& path : dirty) {
    auto old = std::lower_bound(previous.begin(), previous.end(), path, [](const channel::ManifestEntry& e, const std::string& p) { return e.path < p; });
    if (old == previous.end() || old->path != path) continue;  // not listed before: still not listed
    if (old->size <= channel::max_entry_size(old->mode, bounds)) m.bytes -= static_cast<std::int64_t>(old->size);
    if (old->mode != channel::kModeSymlink) m.cached--;
    struct stat st{};
    std::optional<channel::ManifestEntry> e;
    if (::fstatat(dir, path.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !(S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))) {
      m.skipped++;
    } else {
      e = describe_file(dir, path, st, bounds, known, hasher, started, m);
    }
    if (!e) {
      m.entries.push_back(removal_record(path));
      continue;
    }
    if (e->size <= channel::max_entry_size(e->mode, bounds)) m.bytes += static_cast<std::int64_t>(e->size);
    if (e->mode != old->mode || e->id != old->id || e->size != old->size) m.entries.push_back(std::move(*e));
  }
  ::close(dir);
  if (m.bytes > bounds.max_total_bytes)
    return make_rpc_error(channel::agent_error::kTooLarge, what + " holds " + std::to_string(m.bytes) + " bytes in " + std::to_string(previous.size()) +
                                                               " files; the limit is " + std::to_string(bounds.max_total_bytes));
  return m;
}

}  // namespace lockroom::agent
