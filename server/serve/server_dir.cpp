// The shared server's folder; see server_dir.h.
#include "server/serve/server_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lockroom::serve {

namespace fs = std::filesystem;

Result<void> ensure_private_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir.parent_path(), ec);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return make_error(ErrorCode::kUnavailable, "cannot create the lockroom server folder " + dir.string() + ": " + std::strerror(errno));
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0)
    return make_error(ErrorCode::kUnavailable, "cannot read the lockroom server folder " + dir.string() + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode))
    return make_error(ErrorCode::kWrongState, "the lockroom server folder " + dir.string() + " is not a folder; remove it");
  if (st.st_uid != ::geteuid())
    return make_error(ErrorCode::kWrongState, "the lockroom server folder " + dir.string() + " belongs to uid " +
                                                  std::to_string(st.st_uid) + ", not to you (uid " + std::to_string(::geteuid()) +
                                                  "); set LOCKROOM_SERVER_DIR to a folder of your own");
  if ((st.st_mode & 077) != 0 && ::chmod(dir.c_str(), 0700) != 0)
    return make_error(ErrorCode::kWrongState, "cannot make the lockroom server folder " + dir.string() + " private: " + std::strerror(errno));
  return {};
}

fs::path server_socket_path(const fs::path& dir, const std::string& version) { return dir / ("server-" + version + ".sock"); }

fs::path server_lock_path(const fs::path& dir) { return dir / "server.lock"; }

}  // namespace lockroom::serve
