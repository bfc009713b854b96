// CpioArchive; see cpio_writer.h. Format: `man 5 cpio`, "New ASCII Format".
#include "server/vm/image/cpio_writer.h"

#include <sys/stat.h>

#include <cstdio>

namespace lockroom::vm::image {

namespace {

Result<void> check_path(const std::string& path) {
  auto bad = [&](const char* why) {
    return make_error(ErrorCode::kInvalidInput, "cannot put \"" + path + "\" in the initramfs: " + why);
  };
  if (path.empty()) return bad("the path is empty");
  if (path.front() == '/') return bad("paths are relative to the archive root; drop the leading '/'");
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return bad("empty, '.' or '..' path components are not allowed");
    start = end + 1;
  }
  return {};
}

void append_header(std::string& out, std::uint32_t ino, std::uint32_t mode, std::uint32_t nlink, std::size_t size,
                   const std::string& name) {
  char header[111];
  std::snprintf(header, sizeof header, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X", ino, mode, 0u, 0u,
                nlink, 0u, static_cast<unsigned>(size), 0u, 0u, 0u, 0u, static_cast<unsigned>(name.size() + 1), 0u);
  out.append(header, 110);
  out.append(name);
  out.push_back('\0');
  while (out.size() % 4) out.push_back('\0');
}

}  // namespace

Result<void> CpioArchive::add(const std::string& path, Entry entry) {
  if (auto ok = check_path(path); !ok) return ok;
  // Parents first, as directories; an existing non-directory parent is an error.
  for (std::size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    std::string parent = path.substr(0, slash);
    auto it = entries_.find(parent);
    if (it == entries_.end())
      entries_.emplace(parent, Entry{S_IFDIR | 0755, {}});
    else if (!S_ISDIR(it->second.mode))
      return make_error(ErrorCode::kInvalidInput, "cannot put \"" + path + "\" in the initramfs: \"" + parent + "\" is not a directory");
  }
  auto [it, inserted] = entries_.emplace(path, entry);
  if (!inserted && !(S_ISDIR(entry.mode) && S_ISDIR(it->second.mode))) {
    return make_error(ErrorCode::kInvalidInput, "\"" + path + "\" is added to the initramfs twice");
  }
  if (!inserted) it->second.mode = entry.mode;  // an explicit directory mode wins over the implied one
  return {};
}

Result<void> CpioArchive::add_directory(const std::string& path, std::uint32_t mode) {
  return add(path, Entry{S_IFDIR | (mode & 07777), {}});
}

Result<void> CpioArchive::add_file(const std::string& path, std::string data, std::uint32_t mode) {
  return add(path, Entry{S_IFREG | (mode & 07777), std::move(data)});
}

Result<void> CpioArchive::add_symlink(const std::string& path, const std::string& target) {
  if (target.empty()) return make_error(ErrorCode::kInvalidInput, "symlink \"" + path + "\" has an empty target");
  return add(path, Entry{S_IFLNK | 0777, target});
}

std::string CpioArchive::bytes() const {
  std::string out;
  std::size_t total = 512;
  for (const auto& [path, e] : entries_) total += 120 + path.size() + e.data.size();
  out.reserve(total);
  std::uint32_t ino = 1;
  for (const auto& [path, e] : entries_) {
    append_header(out, ino++, e.mode, S_ISDIR(e.mode) ? 2 : 1, e.data.size(), path);
    out.append(e.data);
    while (out.size() % 4) out.push_back('\0');
  }
  append_header(out, 0, 0, 1, 0, "TRAILER!!!");
  return out;
}

}  // namespace lockroom::vm::image
