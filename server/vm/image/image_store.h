// Guest images in lockroom's cache: `<cache>/images/<hash>/` (and package images, the same
// layout, in `<cache>/images/packages/<hash>/`: package_image.h, and npm images in
// `<cache>/images/npm/<hash>/`: npm_image.h) holding `kernel` (an ELF vmlinux,
// or the bzImage when it could not be unpacked), `initrd` (an uncompressed newc cpio) and
// `manifest.json` (what went in, sizes, when it was made). `<cache>/images/current` names the
// image the last build or first use chose. Folders appear only complete (built aside, then
// renamed). Blocking file access: CLI or worker thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/common/result.h"

namespace lockroom::vm::image {

inline constexpr int kImageFormatVersion = 1;

// An optional program of the image (guest_tools.h), or one left out because the host lacks it.
struct ManifestTool {
  std::string name;    // "curl"
  std::string path;    // the host file copied in
  std::string sha256;
  friend bool operator==(const ManifestTool&, const ManifestTool&) = default;
};
struct ManifestMissingTool {
  std::string name;
  std::string reason;  // with the package to install
  friend bool operator==(const ManifestMissingTool&, const ManifestMissingTool&) = default;
};

// A package image's layer (package_image.h): what it was built from.
struct ManifestPackages {
  std::string base_hash;                // the image the layer goes on
  std::vector<std::string> requested;   // the set asked for, sorted
  std::vector<std::string> resolved;    // the closure, "name=version", in apt's order
  std::uint64_t layer_bytes = 0;        // the layer's cpio
  std::size_t files = 0;
  friend bool operator==(const ManifestPackages&, const ManifestPackages&) = default;
};

// An npm image's layer (npm_image.h): what it was built from.
struct ManifestNpm {
  std::string base_hash;                // the image the layer goes on (the default or a package image)
  std::vector<std::string> requested;   // the specs asked for, sorted
  std::vector<std::string> resolved;    // "name@version", every package installed
  std::string lock_sha256;              // of npm's package-lock.json
  std::uint64_t layer_bytes = 0;
  std::size_t files = 0;
  friend bool operator==(const ManifestNpm&, const ManifestNpm&) = default;
};

struct ImageManifest {
  std::string hash;
  int format_version = kImageFormatVersion;
  std::string kernel_package;   // "linux-image-6.1.0-57-amd64"
  std::string kernel_version;   // package version, "6.1.192-3"
  std::string kernel_release;   // "6.1.0-57-amd64"
  std::string kernel_format;    // "vmlinux" (ELF, PVH entry) or "bzImage"
  std::uint64_t kernel_bytes = 0;
  std::uint64_t initrd_bytes = 0;
  std::vector<std::string> modules;  // in load order
  std::string agent_path;
  std::string agent_sha256;
  std::vector<std::string> agent_libs;  // the agent's, git's and the tools'
  std::string git_path;         // the host git copied in (empty in images made before git was carried)
  std::string git_sha256;
  std::vector<ManifestTool> tools;                  // optional programs carried (curl, git's https helper)
  std::vector<ManifestMissingTool> missing_tools;   // optional programs left out, and why
  std::string busybox_sha256;
  std::string created;          // UTC, ISO 8601
  std::optional<ManifestPackages> packages;  // only in package images (and npm images on one)
  std::optional<ManifestNpm> npm;            // only in npm images
};

nlohmann::json manifest_to_json(const ImageManifest& m);
Result<ImageManifest> manifest_from_json(const nlohmann::json& j);

struct GuestImage {
  std::filesystem::path dir;
  ImageManifest manifest;
  std::filesystem::path kernel() const { return dir / "kernel"; }
  std::filesystem::path initrd() const { return dir / "initrd"; }
};

std::filesystem::path images_dir(const std::filesystem::path& cache);
Result<GuestImage> load_image(const std::filesystem::path& dir);
// Every complete image, newest first; unreadable folders are skipped.
std::vector<GuestImage> list_images(const std::filesystem::path& cache);
std::optional<std::string> current_image_hash(const std::filesystem::path& cache);
Result<void> set_current_image(const std::filesystem::path& cache, const std::string& hash);

}  // namespace lockroom::vm::image
