// TempDir: a private folder (0700) that is removed with everything in it unless kept.
//
// Builders make their output in one, next to its final place, and rename it into place when
// complete, so a half-built image or kernel is never seen under its real name.
#pragma once

#include <filesystem>
#include <string>

#include "server/common/result.h"

namespace lockroom::vm::image {

class TempDir {
 public:
  // A new folder named `prefix` + random suffix inside `parent` (created if missing).
  static Result<TempDir> create(const std::filesystem::path& parent, const std::string& prefix);
  TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  TempDir& operator=(TempDir&&) = delete;
  TempDir(const TempDir&) = delete;
  ~TempDir();

  const std::filesystem::path& path() const { return path_; }

 private:
  explicit TempDir(std::filesystem::path path) : path_(std::move(path)) {}
  std::filesystem::path path_;
};

}  // namespace lockroom::vm::image
