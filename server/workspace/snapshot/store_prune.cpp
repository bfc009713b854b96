// Listing and removing workspace stores (see store_prune.h).
#include "server/workspace/snapshot/store_prune.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "server/workspace/snapshot/store_use.h"

namespace lockroom::workspace::snapshot {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::system_clock;

constexpr const char* kStoreDirName = "store.git";
constexpr std::string_view kRemovingTag = ".removing-";

// A file's mtime, or nullopt when it cannot be read.
std::optional<Clock::time_point> mtime_of(const fs::path& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return std::nullopt;
  return Clock::time_point(std::chrono::seconds(st.st_mtim.tv_sec)) +
         std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(st.st_mtim.tv_nsec));
}

std::uint64_t bytes_under(const fs::path& dir) {
  std::uint64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st {};
    if (lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) total += static_cast<std::uint64_t>(st.st_size);
  }
  return total;
}

std::optional<std::string> read_small_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// True when some process holds the store whose marker is `marker` (a shared lock on it).
bool held_by_a_process(const fs::path& marker) {
  int fd = open(marker.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;  // no marker: nothing ever held it (or an older lockroom made it)
  bool held = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  close(fd);  // also lets go of the lock, when we got it
  return held;
}

bool is_removal_leftover(const std::string& name) {
  return !name.empty() && name.front() == '.' && name.find(kRemovingTag) != std::string::npos;
}

}  // namespace

std::vector<StoreListing> list_stores(const fs::path& workspaces_dir) {
  std::vector<StoreListing> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(workspaces_dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string key = it->path().filename().string();
    const fs::path store = it->path() / kStoreDirName;
    std::error_code type_ec;
    if (key.empty() || key.front() == '.' || !it->is_directory(type_ec) || it->is_symlink(type_ec) ||
        !fs::is_directory(fs::symlink_status(store, type_ec))) {
      continue;
    }
    StoreListing listing;
    listing.dir = it->path();
    listing.key = key;
    if (auto recorded = read_small_file(store / kStoreWorkspaceFile); recorded && !recorded->empty()) {
      listing.workspace = *recorded;
      listing.workspace_exists = fs::exists(*recorded, type_ec);
    }
    // The marker's time is set by every snapshot; stores made before there was a marker have
    // the times of their stat cache and of the store folder itself.
    if (auto marked = mtime_of(store / kStoreInUseFile)) {
      listing.last_used = *marked;
    } else {
      for (const fs::path& p : {store / "lockroom-stat-cache", store})
        if (auto when = mtime_of(p)) listing.last_used = std::max(listing.last_used, *when);
    }
    listing.bytes = bytes_under(listing.dir);
    listing.in_use = held_by_a_process(store / kStoreInUseFile);
    out.push_back(std::move(listing));
  }
  std::sort(out.begin(), out.end(), [](const StoreListing& a, const StoreListing& b) { return a.key < b.key; });
  return out;
}

bool should_prune(const StoreListing& store, const PruneRule& rule, Clock::time_point now) {
  if (store.in_use) return false;
  if (rule.all) return true;
  if (rule.orphaned && store.workspace && !store.workspace_exists) return true;
  return rule.unused_for && now - store.last_used >= *rule.unused_for;
}

Result<bool> remove_store(const StoreListing& store) {
  const fs::path marker = store.dir / kStoreDirName / kStoreInUseFile;
  int fd = open(marker.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == ENOENT) return true;  // already gone
    return make_error(ErrorCode::kUnavailable, "cannot lock the workspace store " + store.dir.string() + ": " + std::strerror(errno));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    close(fd);
    if (err == EWOULDBLOCK) return false;
    return make_error(ErrorCode::kUnavailable, "cannot lock the workspace store " + store.dir.string() + ": " + std::strerror(err));
  }
  // Out of the way first (atomically), so no process can open it while it is being deleted: one
  // that tries finds no store and makes a new one.
  static std::atomic<unsigned> removals{0};
  const fs::path aside = store.dir.parent_path() / ("." + store.key + std::string(kRemovingTag) + std::to_string(getpid()) +
                                                    "-" + std::to_string(removals++));
  std::error_code ec;
  fs::rename(store.dir, aside, ec);
  if (ec) {
    close(fd);
    return make_error(ErrorCode::kUnavailable, "cannot remove the workspace store " + store.dir.string() + ": " + ec.message());
  }
  fs::remove_all(aside, ec);
  close(fd);
  if (ec) {
    return make_error(ErrorCode::kUnavailable,
                      "the workspace store " + store.dir.string() + " was moved to " + aside.string() + " but not all removed: " + ec.message());
  }
  return true;
}

PruneReport prune_stores(const fs::path& workspaces_dir, const PruneRule& rule, Clock::time_point now) {
  PruneReport report;
  std::error_code ec;
  for (auto it = fs::directory_iterator(workspaces_dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (!is_removal_leftover(it->path().filename().string())) continue;
    report.bytes_freed += bytes_under(it->path());
    std::error_code rm;
    fs::remove_all(it->path(), rm);
  }
  for (StoreListing& store : list_stores(workspaces_dir)) {
    StoreListing if_free = store;
    if_free.in_use = false;
    if (!should_prune(if_free, rule, now)) continue;
    if (store.in_use) {
      report.kept_in_use.push_back(std::move(store));
      continue;
    }
    auto removed = remove_store(store);
    if (!removed) {
      report.errors.push_back(removed.error().message);
    } else if (*removed) {
      report.bytes_freed += store.bytes;
      report.removed.push_back(std::move(store));
    } else {
      report.kept_in_use.push_back(std::move(store));
    }
  }
  return report;
}

}  // namespace lockroom::workspace::snapshot
