// The guest kernel: Debian's `linux-image-amd64` package, fetched with the host's own apt and
// unpacked into lockroom's cache — never installed on the host.
//
// ensure_kernel() finds the versioned package that `linux-image-amd64` depends on (one
// `apt-cache show`), and unless
// that exact package version is already unpacked under `kernels_dir`, runs `apt-get download`
// in a temporary folder (no root needed; the host's apt sources decide where from),
// `dpkg-deb -x` into a temporary folder, `depmod -b` (the package ships no modules.dep; busybox's
// depmod is used when kmod is not installed), and renames the result into place. When apt has
// no answer (offline, no apt) a kernel unpacked earlier is used. Blocking: CLI or worker thread.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "server/common/result.h"
#include "server/vm/image/progress.h"

namespace lockroom::vm::image {

struct KernelTree {
  std::string package;          // "linux-image-6.1.0-57-amd64"
  std::string package_version;  // "6.1.192-3"
  std::string release;          // "6.1.0-57-amd64": the lib/modules folder, `uname -r` in the guest
  std::filesystem::path root;   // the unpacked package

  std::filesystem::path vmlinuz() const { return root / "boot" / ("vmlinuz-" + release); }
  std::filesystem::path modules_dir() const { return root / "lib" / "modules" / release; }
};

inline constexpr const char* kKernelMetaPackage = "linux-image-amd64";

struct KernelChoice {
  std::string package;                 // "linux-image-6.1.0-57-amd64"
  std::optional<std::string> version;  // when the meta package pins it: "(= 6.1.192-3)"
};
// The first linux-image-… in a "Depends:" line of `apt-cache show linux-image-amd64` (or of
// `apt-cache depends`), with the version it is pinned to, if any.
std::optional<KernelChoice> parse_kernel_dependency(std::string_view record);
// The "Version:" field of an `apt-cache show` or `dpkg-deb -f` record.
std::optional<std::string> parse_version_field(std::string_view record);
// "linux-image-6.1.0-57-amd64" -> "6.1.0-57-amd64".
std::string kernel_release_of(std::string_view package);

// `busybox` is used for depmod when the host has no kmod. apt's answer is remembered for a day
// (`<kernels_dir>/.resolved`); `refresh` asks apt again.
Result<KernelTree> ensure_kernel(const std::filesystem::path& kernels_dir, const std::filesystem::path& busybox, bool refresh,
                                 const Progress& progress);

}  // namespace lockroom::vm::image
