// The snapshot store's stat cache (see stat_cache.h).
#include "server/workspace/snapshot/stat_cache.h"

#include <unistd.h>

#include <cstring>

namespace lockroom::workspace::snapshot {
namespace {

constexpr const char* kCacheFile = "lockroom-stat-cache";
constexpr time_t kRacyWindowSeconds = 2;

std::uint32_t git_mode(EntryKind kind) {
  switch (kind) {
    case EntryKind::kFile: return GIT_FILEMODE_BLOB;
    case EntryKind::kExecutable: return GIT_FILEMODE_BLOB_EXECUTABLE;
    case EntryKind::kSymlink: return GIT_FILEMODE_LINK;
  }
  return GIT_FILEMODE_BLOB;
}

bool same_time(const git_index_time& cached, const timespec& now) {
  return cached.seconds == static_cast<std::int32_t>(now.tv_sec) &&
         cached.nanoseconds == static_cast<std::uint32_t>(now.tv_nsec);
}

bool older_than(const timespec& a, const timespec& b) {
  return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec < b.tv_nsec);
}

}  // namespace

Result<StatCache> StatCache::open(const std::string& store_dir, const timespec& scan_started) {
  const std::string path = store_dir + "/" + kCacheFile;
  auto open_index = [&](IndexPtr& out) {
    git_index* raw = nullptr;
    if (git_index_open(&raw, path.c_str()) != 0) return false;
    out.reset(raw);
    return true;
  };
  StatCache cache;
  if (!open_index(cache.index_)) {
    unlink(path.c_str());  // unreadable (e.g. cut short by a crash): start over
    if (!open_index(cache.index_)) {
      return make_error(ErrorCode::kInternal, git_error_text("cannot open the snapshot stat cache " + path, -1));
    }
  }
  cache.trusted_before_ = scan_started;
  cache.trusted_before_.tv_sec -= kRacyWindowSeconds;
  return cache;
}

std::optional<git_oid> StatCache::lookup(const ScannedEntry& entry, git_odb* odb) const {
  const git_index_entry* cached = git_index_get_bypath(index_.get(), entry.path.c_str(), 0);
  if (!cached || cached->mtime.seconds == 0) return std::nullopt;
  const struct stat& st = entry.stat;
  const bool unchanged = cached->mode == git_mode(entry.kind) && same_time(cached->mtime, st.st_mtim) &&
                         same_time(cached->ctime, st.st_ctim) && cached->ino == static_cast<std::uint32_t>(st.st_ino) &&
                         cached->dev == static_cast<std::uint32_t>(st.st_dev) &&
                         cached->file_size == static_cast<std::uint32_t>(st.st_size);
  if (!unchanged || !git_odb_exists(odb, &cached->id)) return std::nullopt;
  return cached->id;
}

Result<void> StatCache::add(const std::string& path, EntryKind kind, const git_oid& id, const struct stat& st) {
  Added a{path, kind, id, st};
  if (!added_.empty() && !(added_.back().path < path)) in_order_ = false;
  added_.push_back(a);
  if (auto put = put_entry(a); !put) return put.error();
  return {};
}

Result<void> StatCache::put_entry(const Added& a) {
  git_index_entry e;
  std::memset(&e, 0, sizeof e);
  e.path = a.path.c_str();
  e.mode = git_mode(a.kind);
  e.id = a.id;
  e.file_size = static_cast<std::uint32_t>(a.stat.st_size);
  e.ino = static_cast<std::uint32_t>(a.stat.st_ino);
  e.dev = static_cast<std::uint32_t>(a.stat.st_dev);
  e.uid = a.stat.st_uid;
  e.gid = a.stat.st_gid;
  e.ctime.seconds = static_cast<std::int32_t>(a.stat.st_ctim.tv_sec);
  e.ctime.nanoseconds = static_cast<std::uint32_t>(a.stat.st_ctim.tv_nsec);
  if (older_than(a.stat.st_mtim, trusted_before_)) {  // else leave 0: not trusted next time
    e.mtime.seconds = static_cast<std::int32_t>(a.stat.st_mtim.tv_sec);
    e.mtime.nanoseconds = static_cast<std::uint32_t>(a.stat.st_mtim.tv_nsec);
  }
  // An entry that is already exactly this is left alone: adding it again would drop its
  // folders' cached trees.
  const git_index_entry* old = git_index_get_bypath(index_.get(), e.path, 0);
  if (old && old->mode == e.mode && git_oid_equal(&old->id, &e.id) && old->file_size == e.file_size && old->ino == e.ino &&
      old->dev == e.dev && old->uid == e.uid && old->gid == e.gid && old->ctime.seconds == e.ctime.seconds &&
      old->ctime.nanoseconds == e.ctime.nanoseconds && old->mtime.seconds == e.mtime.seconds &&
      old->mtime.nanoseconds == e.mtime.nanoseconds && (old->flags & 0xf000) == 0 && old->flags_extended == 0)
    return {};
  if (int rc = git_index_add(index_.get(), &e); rc < 0) {
    return make_error(ErrorCode::kInvalidInput, git_error_text("git cannot store the path " + a.path, rc));
  }
  return {};
}

Result<git_oid> StatCache::write_tree(git_repository* store) {
  // The entries of files that are gone go too; should the index then not hold exactly what was
  // added (it cannot, but a wrong tree would be a wrong snapshot), it is built again from scratch.
  std::vector<std::string> gone;
  if (in_order_) {
    std::size_t next = 0;
    for (std::size_t i = 0, n = git_index_entrycount(index_.get()); i < n; ++i) {
      const git_index_entry* e = git_index_get_byindex(index_.get(), i);
      while (next < added_.size() && added_[next].path < e->path) ++next;
      if (next >= added_.size() || added_[next].path != e->path || git_index_entry_stage(e) != 0) gone.emplace_back(e->path);
    }
    for (const auto& path : gone) git_index_remove(index_.get(), path.c_str(), 0);
  }
  if (!in_order_ || git_index_entrycount(index_.get()) != added_.size()) {
    if (int rc = git_index_clear(index_.get()); rc < 0) {
      return make_error(ErrorCode::kInternal, git_error_text("cannot reset the snapshot stat cache", rc));
    }
    for (const auto& a : added_)
      if (auto put = put_entry(a); !put) return put.error();
  }
  git_oid tree;
  if (int rc = git_index_write_tree_to(&tree, index_.get(), store); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot write the snapshot's trees", rc));
  }
  return tree;
}

bool StatCache::save() { return git_index_write(index_.get()) == 0; }

}  // namespace lockroom::workspace::snapshot
