// The package layer; see package_layer.h. newc format: `man 5 cpio`, "New ASCII Format".
#include "server/vm/image/package_layer.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "server/vm/image/initramfs.h"

namespace lockroom::vm::image {

namespace fs = std::filesystem;

namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

Result<std::uint32_t> hex_field(std::string_view header, int index) {
  std::uint32_t value = 0;
  for (char c : header.substr(6 + static_cast<std::size_t>(index) * 8, 8)) {
    int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (digit < 0) return make_error(ErrorCode::kInvalidInput, "the base initrd has a cpio header that is not hexadecimal");
    value = value << 4 | static_cast<std::uint32_t>(digit);
  }
  return value;
}

std::size_t align4(std::size_t n) { return (n + 3) & ~std::size_t{3}; }

// "a/b/c" -> "a", "a/b".
std::vector<std::string> ancestors(const std::string& path) {
  std::vector<std::string> out;
  for (std::size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) out.push_back(path.substr(0, slash));
  return out;
}

}  // namespace

Result<BaseIndex> read_initrd_index(std::string_view b) {
  BaseIndex index;
  std::size_t at = 0;
  for (;;) {
    if (b.size() < at + 110 || b.substr(at, 6) != "070701")
      return make_error(ErrorCode::kInvalidInput, "the base initrd is not a newc cpio archive (or is cut short at byte " + std::to_string(at) + ")");
    std::string_view header = b.substr(at, 110);
    auto mode = hex_field(header, 1);
    auto size = hex_field(header, 6);
    auto name_size = hex_field(header, 11);
    if (!mode || !size || !name_size) return mode ? (size ? name_size.error() : size.error()) : mode.error();
    if (*name_size == 0 || b.size() < at + 110 + *name_size)
      return make_error(ErrorCode::kInvalidInput, "the base initrd has an entry name running past its end");
    std::string name(b.substr(at + 110, *name_size - 1));
    std::size_t data_at = align4(at + 110 + *name_size);
    if (b.size() < data_at + *size) return make_error(ErrorCode::kInvalidInput, "the base initrd has an entry \"" + name + "\" running past its end");
    if (name == "TRAILER!!!") return index;
    BaseEntry entry{*mode, {}};
    if (S_ISLNK(*mode)) entry.target = std::string(b.substr(data_at, *size));
    index[name] = std::move(entry);
    at = align4(data_at + *size);
  }
}

bool layer_leaves_out(std::string_view path) {
  for (std::string_view runtime : {"dev", "proc", "sys", "run", "tmp"})
    if (path == runtime || starts_with(path, std::string(runtime) + "/")) return true;
  if (starts_with(path, "usr/share/doc/")) {
    // Keep each package's copyright notice: usr/share/doc/NAME/copyright.
    std::string_view rest = path.substr(14);
    std::size_t slash = rest.find('/');
    return !(slash != std::string_view::npos && rest.substr(slash + 1) == "copyright");
  }
  for (std::string_view docs : {"usr/share/man", "usr/share/info", "usr/share/lintian", "usr/share/locale"})
    if (path == docs || starts_with(path, std::string(docs) + "/")) return true;
  return false;
}

bool package_may_replace(const std::string& path, const BaseEntry& base) {
  return S_ISLNK(base.mode) && base.target == "busybox" && starts_with(path, "bin/") && path != "bin/sh" &&
         path.find('/', 4) == std::string::npos;
}

Result<PackageLayer> plan_package_layer(const std::vector<UnpackedPackage>& packages, const BaseIndex& base) {
  PackageLayer layer;
  std::map<std::string, std::uint32_t> added;  // path -> mode, across packages
  // A directory the base has is given the base's mode, explicitly (an implied parent would be 0755).
  auto keep_base_dirs = [&](const std::string& path) -> Result<void> {
    for (const auto& parent : ancestors(path)) {
      auto it = base.find(parent);
      if (it != base.end() && S_ISDIR(it->second.mode) && !added.count(parent)) {
        if (auto ok = layer.archive.add_directory(parent, it->second.mode & 07777); !ok) return ok;
        added[parent] = it->second.mode;
      }
    }
    return {};
  };

  for (const auto& package : packages) {
    PackageSize size{package.name, {}, 0, 0};
    bool kept_any = false;
    std::error_code ec;
    fs::recursive_directory_iterator it(package.root, fs::directory_options::none, ec), end;
    if (ec) return make_error(ErrorCode::kUnavailable, "cannot read the unpacked package " + package.name + ": " + ec.message());
    std::vector<fs::path> entries;
    for (; it != end; it.increment(ec)) {
      if (ec) return make_error(ErrorCode::kUnavailable, "cannot read the unpacked package " + package.name + ": " + ec.message());
      entries.push_back(it->path());
    }
    std::sort(entries.begin(), entries.end());  // parents before children, the same order every time
    for (const auto& host : entries) {
      std::string path = host.lexically_relative(package.root).generic_string();
      if (path.empty() || layer_leaves_out(path)) {
        ++layer.paths_left_out;
        continue;
      }
      struct stat st {};
      if (lstat(host.c_str(), &st) != 0)
        return make_error(ErrorCode::kUnavailable, "cannot read " + host.string() + ": " + std::strerror(errno));
      // Under something that is not a directory, in the base or in an earlier package: left out.
      bool blocked = false;
      for (const auto& parent : ancestors(path)) {
        auto b = base.find(parent);
        auto a = added.find(parent);
        if ((b != base.end() && !S_ISDIR(b->second.mode)) || (a != added.end() && !S_ISDIR(a->second))) blocked = true;
      }
      auto in_base = base.find(path);
      if (!blocked && in_base != base.end()) {
        bool both_dirs = S_ISDIR(in_base->second.mode) && S_ISDIR(st.st_mode);
        if (!both_dirs && !(package_may_replace(path, in_base->second) && !S_ISDIR(st.st_mode))) {
          ++layer.paths_kept_from_base;
          kept_any = true;
          continue;
        }
      }
      if (blocked || (added.count(path) && !(S_ISDIR(st.st_mode) && S_ISDIR(added[path])))) {
        ++layer.paths_left_out;
        continue;
      }
      if (auto ok = keep_base_dirs(path); !ok) return ok.error();
      Result<void> ok;
      if (S_ISDIR(st.st_mode)) {
        std::uint32_t mode = in_base != base.end() ? in_base->second.mode : st.st_mode;
        ok = layer.archive.add_directory(path, mode & 07777);
      } else if (S_ISLNK(st.st_mode)) {
        std::string target = fs::read_symlink(host, ec).string();
        if (ec) return make_error(ErrorCode::kUnavailable, "cannot read the link " + host.string() + ": " + ec.message());
        size.installed_bytes += target.size();
        ok = layer.archive.add_symlink(path, target);
        ++layer.files;
      } else if (S_ISREG(st.st_mode)) {
        auto bytes = read_host_file(host);
        if (!bytes) return bytes.error();
        size.installed_bytes += bytes->size();
        ok = layer.archive.add_file(path, std::move(*bytes), st.st_mode & 07777);
        ++layer.files;
      } else {
        ++layer.paths_left_out;  // devices, fifos: a package never needs them unpacked
        continue;
      }
      if (!ok) return make_error(ok.error().code, "package " + package.name + ": " + ok.error().message);
      added[path] = st.st_mode;
    }
    layer.unpacked.push_back(size);
    if (kept_any) layer.base_kept.push_back(package.name);
  }
  return layer;
}

}  // namespace lockroom::vm::image
