// npm images: a guest image (the default one, or a package image) plus one npm layer
// (npm_layer.h), for kits that say `npm: [...]`.
//
// ensure_npm_image() finds or builds the layer, then writes `<cache>/images/npm/<key>/` the way
// package images are written: `kernel` (a link to the parent's), `initrd` (the parent's initrd
// with the npm layer appended; the kernel unpacks concatenated archives in order) and
// `manifest.json` (the parent's, with an "npm" part). The key covers the parent image's hash,
// the layer's key (the specs and tarballs) and npm's package-lock.json, so templates (keyed by
// image hash) are per parent and npm tree by themselves. Blocking: CLI or worker thread.
#pragma once

#include <filesystem>
#include <vector>

#include "server/common/result.h"
#include "server/vm/image/image_store.h"
#include "server/vm/image/npm_layer.h"
#include "server/vm/image/progress.h"

namespace lockroom::vm::image {

// `parent` itself when options.specs is empty.
Result<GuestImage> ensure_npm_image(const GuestImage& parent, const NpmLayerOptions& options, const Progress& progress);

std::filesystem::path npm_images_dir(const std::filesystem::path& cache);  // <cache>/images/npm

// Every complete npm image, newest first.
std::vector<GuestImage> list_npm_images(const std::filesystem::path& cache);

struct NpmPrune {
  std::size_t images = 0;
  std::size_t layers = 0;
  std::uint64_t bytes = 0;
};
// Removes every npm image and every cached npm layer.
NpmPrune prune_npm_images(const std::filesystem::path& cache);

}  // namespace lockroom::vm::image
