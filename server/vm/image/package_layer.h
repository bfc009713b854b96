// The package layer: unpacked Debian packages as one extra newc cpio, unpacked by the kernel
// over the base image (the kernel accepts concatenated archives; a later entry replaces an
// earlier file or symlink, and sets the mode of a directory that exists).
//
// What goes in, and why (the guest stays what the base image tested):
//   - every file, symlink and directory of the packages, owner root, modes kept;
//   - except what the base image already has as a file or symlink: the agent, busybox, git, the
//     host libraries the base carries (libc6's libc.so.6, zlib…), /init, /etc/passwd… are kept
//     from the base, whose copies come from this host (the same apt sources). Busybox's applet
//     links in /bin are the exception: a package's program replaces them (`coreutils` gives GNU
//     ls), but /bin/sh stays busybox's, which /init and the kits' setup commands run under;
//   - a directory the base has keeps the base's mode (the kernel would chmod it otherwise);
//   - nothing under dev/, proc/, sys/, run/, tmp/ (the guest's runtime places), and no
//     documentation (usr/share/{doc,man,info,lintian,locale}; copyright files are kept).
// Maintainer scripts are not run (see package_image.h). File reads; CLI or worker thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "server/common/result.h"
#include "server/vm/image/cpio_writer.h"
#include "server/vm/image/package_closure.h"

namespace lockroom::vm::image {

// One path of the base image's initrd.
struct BaseEntry {
  std::uint32_t mode = 0;  // with the file type bits
  std::string target;      // a symlink's target
};
using BaseIndex = std::map<std::string, BaseEntry>;

// The paths of a newc cpio (the base initrd), up to its trailer. Fails on a damaged archive.
Result<BaseIndex> read_initrd_index(std::string_view newc);

// An unpacked .deb (`dpkg-deb -x` output).
struct UnpackedPackage {
  std::string name;
  std::filesystem::path root;
};

struct PackageLayer {
  CpioArchive archive;
  std::size_t files = 0;                 // regular files and symlinks put in
  std::vector<PackageSize> unpacked;     // per package: bytes put in (installed_bytes)
  std::vector<std::string> base_kept;    // packages with files the base image already had (kept from the base)
  std::size_t paths_kept_from_base = 0;
  std::size_t paths_left_out = 0;        // documentation, runtime places, clashes between packages
};

// Whether the layer leaves `path` (relative, "usr/share/doc/jq/README") out by rule.
bool layer_leaves_out(std::string_view path);
// Whether a package file may replace the base's entry at `path`.
bool package_may_replace(const std::string& path, const BaseEntry& base);

// The layer for `packages` (in apt's install order) over `base`.
Result<PackageLayer> plan_package_layer(const std::vector<UnpackedPackage>& packages, const BaseIndex& base);

}  // namespace lockroom::vm::image
