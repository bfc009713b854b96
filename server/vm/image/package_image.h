// Package images: the base guest image plus one layer of Debian packages, for kits that say
// `packages: [...]`.
//
// ensure_package_image() resolves the set's dependency closure with the host's apt (a simulated
// install against an empty package database: package_closure.h; no root needed; the host's apt
// sources decide where from, and APT_CONFIG points apt at other ones, as for the kernel), checks
// the installed size against the bound, downloads the .debs it lacks with `apt-get download`
// into `<cache>/packages/debs/`, unpacks each with `dpkg-deb -x` (maintainer scripts are NOT run:
// no postinst, no triggers, no update-alternatives, no ld.so.cache; the one postinst job done
// instead is compiling Python modules with the host's python3 when it is the same interpreter
// version), builds the layer (package_layer.h) and writes `<cache>/images/packages/<key>/` — `kernel` (a link to the base
// image's), `initrd` (the base initrd with the layer appended) and `manifest.json` (the base's,
// with a "packages" part). The key covers the base image's hash, the set and every resolved
// version, so templates (keyed by image hash) are per package set by themselves. apt's answer
// for a set is remembered for a day (`<cache>/packages/resolved/`) and used, with a note, when
// apt cannot be asked. Progress lines for each slow step. Blocking: CLI or worker thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "server/common/result.h"
#include "server/vm/image/image_store.h"
#include "server/vm/image/progress.h"

namespace lockroom::vm::image {

// The most a layer may add (installed size before, unpacked size after): the guest's files live
// in its RAM. LOCKROOM_MAX_PACKAGE_MIB overrides the default.
constexpr std::uint64_t kDefaultMaxPackageBytes = 192ull << 20;
std::uint64_t max_package_bytes_from_env();

struct PackageImageOptions {
  std::filesystem::path cache;
  std::vector<std::string> packages;  // as the kits list them; sorted and de-duplicated here
  std::uint64_t max_bytes = kDefaultMaxPackageBytes;
  bool refresh = false;               // ask apt again even when its answer is less than a day old
};

// `base` itself when the set is empty.
Result<GuestImage> ensure_package_image(const GuestImage& base, const PackageImageOptions& options, const Progress& progress);

std::filesystem::path package_images_dir(const std::filesystem::path& cache);  // <cache>/images/packages
std::filesystem::path package_files_dir(const std::filesystem::path& cache);   // <cache>/packages

// Every complete package image, newest first.
std::vector<GuestImage> list_package_images(const std::filesystem::path& cache);

struct PackagePrune {
  std::size_t images = 0;
  std::size_t debs = 0;
  std::uint64_t bytes = 0;
};
// Removes every package image, the downloaded .debs and apt's remembered answers.
PackagePrune prune_package_images(const std::filesystem::path& cache);

}  // namespace lockroom::vm::image
