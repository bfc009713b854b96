// EagerHashes; see workspace_eager_hash.h.
#include "guest/workspace_eager_hash.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace lockroom::agent {

void EagerHashes::queue(const std::vector<std::string>& paths) {
  for (const auto& path : paths) {
    if (queue_.size() >= kMaxQueued) return;  // the manifest hashes the rest itself
    if (queued_.insert(path).second) queue_.push_back(path);
  }
}

void EagerHashes::keep_bytes(std::uint64_t max_file, std::uint64_t max_total) {
  keep_file_ = max_file;
  keep_total_ = max_total;
}

void EagerHashes::work(const std::string& root, std::uint64_t events, std::int64_t budget_ns) {
  if (queue_.empty()) return;
  int dir = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return clear();
  const std::int64_t until = monotonic_ns() + budget_ns;
  BlobHasher hasher;
  while (!queue_.empty() && monotonic_ns() < until) {
    std::string path = std::move(queue_.front());
    queue_.pop_front();
    queued_.erase(path);
    struct stat st{};
    if (::fstatat(dir, path.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) || st.st_size > kMaxFileBytes) continue;
    Done done;
    done.after = events;
    done.hash.hashed_at_ns = realtime_ns();
    KeptContent kept;
    if (auto old = done_.find(path); old != done_.end() && old->second.hash.bytes) {
      kept_ -= old->second.hash.bytes->size();  // replaced below, or dropped
      old->second.hash.bytes.reset();
    }
    kept.max_bytes = std::min(keep_file_, keep_total_ - std::min(keep_total_, kept_));
    auto raw = hash_regular(dir, path, hasher, st, kept.max_bytes ? &kept : nullptr);
    if (!raw) {
      done_.erase(path);
      continue;
    }
    done.hash.key = stat_key(st);
    done.hash.raw_id = std::move(*raw);
    if (kept.kept) {
      kept_ += kept.bytes.size();
      done.hash.bytes = std::move(kept.bytes);
    }
    done_[path] = std::move(done);
  }
  ::close(dir);
}

EarlierHashes EagerHashes::take(const WorkspaceWatch::Changes& seen) {
  EarlierHashes out;
  if (!seen.lost)
    for (auto& [path, done] : done_) {
      if (done.after < seen.watching_since) continue;  // hashed before the watch could see a change
      auto event = seen.last_event.find(path);
      if (event == seen.last_event.end() || event->second <= done.after) out.emplace(path, std::move(done.hash));
    }
  clear();
  return out;
}

void EagerHashes::clear() {
  queue_.clear();
  queued_.clear();
  done_.clear();
  kept_ = 0;
}

}  // namespace lockroom::agent
