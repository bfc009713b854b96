// A `newc` cpio archive, the format the Linux kernel unpacks as an initramfs.
//
// Pure and deterministic: entries are emitted sorted by path, with inode numbers counted from 1
// in that order, mtime 0, owner root:root — so the same entries always give byte-identical
// bytes, and the image hash can be trusted. Parent directories are added automatically (the
// kernel does not create them). Held in memory: an initramfs is a few megabytes. CLI thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "server/common/result.h"

namespace lockroom::vm::image {

class CpioArchive {
 public:
  // Paths are relative ("sbin/init"), without "." or ".." components. Adding the same path twice
  // is an error unless both entries are identical directories.
  Result<void> add_directory(const std::string& path, std::uint32_t mode = 0755);
  Result<void> add_file(const std::string& path, std::string data, std::uint32_t mode = 0644);
  Result<void> add_symlink(const std::string& path, const std::string& target);

  // The archive, ending with the TRAILER!!! entry.
  std::string bytes() const;
  std::size_t entry_count() const { return entries_.size(); }

 private:
  struct Entry {
    std::uint32_t mode = 0;  // file type bits included
    std::string data;        // file contents or symlink target
  };
  Result<void> add(const std::string& path, Entry entry);

  std::map<std::string, Entry> entries_;
};

}  // namespace lockroom::vm::image
