// Stores held in use by this process (see store_use.h).
#include "server/workspace/snapshot/store_use.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

namespace lockroom::workspace::snapshot {
namespace {

namespace fs = std::filesystem;

std::mutex held_mutex;
std::map<std::string, int>& held() {  // marker path -> the fd holding its shared lock
  static auto* stores = new std::map<std::string, int>;
  return *stores;
}

bool same_file(int fd, const std::string& path) {
  struct stat open_st {}, path_st {};
  return fstat(fd, &open_st) == 0 && stat(path.c_str(), &path_st) == 0 && open_st.st_dev == path_st.st_dev &&
         open_st.st_ino == path_st.st_ino;
}

Error marker_error(const std::string& marker, int err) {
  return make_error(ErrorCode::kUnavailable, "cannot mark the snapshot store in use (" + marker + "): " + std::strerror(err));
}

}  // namespace

Result<void> hold_store(const std::string& store_dir) {
  const std::string marker = (fs::path(store_dir) / kStoreInUseFile).string();
  std::lock_guard<std::mutex> lock(held_mutex);
  auto& stores = held();
  if (auto it = stores.find(marker); it != stores.end()) {
    if (same_file(it->second, marker)) {
      futimens(it->second, nullptr);
      return {};
    }
    close(it->second);  // the store was removed behind our back (by hand): hold the new one
    stores.erase(it);
  }
  // A prune that holds the exclusive lock renames the store away before it lets go; a lock taken
  // on a marker that is no longer at `marker` is worthless, so take it again on the new one.
  for (int attempt = 0; attempt < 5; ++attempt) {
    std::error_code ec;
    fs::create_directories(store_dir, ec);
    if (ec) return make_error(ErrorCode::kUnavailable, "cannot create the snapshot store " + store_dir + ": " + ec.message());
    int fd = open(marker.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
      if (errno == ENOENT) continue;  // removed between the mkdir and the open
      return marker_error(marker, errno);
    }
    if (flock(fd, LOCK_SH) != 0) {
      int err = errno;
      close(fd);
      return marker_error(marker, err);
    }
    if (!same_file(fd, marker)) {
      close(fd);
      continue;
    }
    futimens(fd, nullptr);
    stores.emplace(marker, fd);
    return {};
  }
  return make_error(ErrorCode::kUnavailable, "cannot mark the snapshot store " + store_dir +
                                                 " in use: it keeps being removed (is `lockroom workspace prune` running in a loop?)");
}

void release_held_stores() {
  std::lock_guard<std::mutex> lock(held_mutex);
  for (const auto& [marker, fd] : held()) close(fd);
  held().clear();
}

Result<void> record_store_workspace(const std::string& store_dir, const std::string& workspace_real_path) {
  const fs::path file = fs::path(store_dir) / kStoreWorkspaceFile;
  {
    std::ifstream in(file, std::ios::binary);
    std::stringstream now;
    now << in.rdbuf();
    if (in.is_open() && now.str() == workspace_real_path) return {};
  }
  // Written aside and renamed over, so a reader never sees half a path.
  const fs::path temp = fs::path(store_dir) / (std::string(kStoreWorkspaceFile) + ".tmp" + std::to_string(getpid()));
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << workspace_real_path;
    if (!out.flush()) {
      return make_error(ErrorCode::kUnavailable, "cannot write " + temp.string());
    }
  }
  std::error_code ec;
  fs::rename(temp, file, ec);
  if (ec) {
    fs::remove(temp, ec);
    return make_error(ErrorCode::kUnavailable, "cannot write " + file.string() + ": " + ec.message());
  }
  return {};
}

}  // namespace lockroom::workspace::snapshot
