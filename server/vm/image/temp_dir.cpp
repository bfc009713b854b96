// TempDir; see temp_dir.h.
#include "server/vm/image/temp_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>

namespace lockroom::vm::image {

Result<TempDir> TempDir::create(const std::filesystem::path& parent, const std::string& prefix) {
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  if (ec) return make_error(ErrorCode::kUnavailable, "cannot create " + parent.string() + ": " + ec.message());
  std::string pattern = (parent / (prefix + "XXXXXX")).string();
  if (!mkdtemp(pattern.data()))
    return make_error(ErrorCode::kUnavailable, "cannot create a folder in " + parent.string() + ": " + std::strerror(errno));
  return TempDir(std::filesystem::path(pattern));
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace lockroom::vm::image
