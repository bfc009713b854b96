// TempDir: a fresh directory under $TMPDIR (or /tmp) for one test, removed with everything in it
// when the test ends; write() puts a file in it, making the folders on the way.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace lockroom::testing {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "lockroom-test") {
    // mkdtemp fills in the XXXXXX; temp_directory_path() honours $TMPDIR.
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp " + pattern + " failed");
    path_ = std::filesystem::canonical(pattern);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& relative) const { return path_ / relative; }
  // Writes `content` to `relative` (binary, replacing it) and returns the file's path.
  std::filesystem::path write(const std::string& relative, const std::string& content) const {
    std::filesystem::path file = path_ / relative;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary | std::ios::trunc) << content;
    return file;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace lockroom::testing
