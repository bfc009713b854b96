// The npm layer: a kit's `npm:` packages installed ON THE HOST by the host's own npm, as one
// extra newc cpio the guest kernel unpacks over its image (as the Debian package layer is).
//
// ensure_npm_layer() runs, in a private staging folder,
//   npm install --global=false --prefix STAGING/usr/local/lib --omit=dev --ignore-scripts
//               --no-audit --no-fund --no-update-notifier SPEC…
// so npm's own configuration (~/.npmrc, NPM_CONFIG_* such as NPM_CONFIG_REGISTRY, its cache and
// proxy settings) decides where the packages come from; lockroom names no registry. Install
// scripts are not run (like the Debian layer's maintainer scripts). The layer holds
//   /usr/local/lib/node_modules/…   the installed tree (npm's hoisted layout; node finds a
//                                   package's dependencies there by walking up), and
//   /usr/local/bin/NAME             each `bin` of the packages asked for (not of their
//                                   dependencies, as `npm install -g` does): a shell script
//                                   running it with `node` when it is a node program (the
//                                   guest has no /usr/bin/env), else a symlink.
// Node itself is not in it: a kit asks for Debian's `nodejs` in `packages:`.
//
// Cached in `<cache>/npm/layers/<key>/` (`layer.cpio`, `package-lock.json`, `layer.json`), the key
// made of the specs and, for file: specs, the tarballs' contents: a later create with the same
// specs runs no npm at all. A range or tag ("^1.2", "latest") is resolved once and kept until
// `lockroom image prune`; exact versions are recommended. The image key (npm_image.h) adds the
// resolved tree (package-lock.json's hash). Bounded: LOCKROOM_MAX_NPM_MIB (default 256) of
// unpacked files. Blocking: CLI or worker thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "server/common/result.h"
#include "server/vm/image/progress.h"

namespace lockroom::vm::image {

constexpr std::uint64_t kDefaultMaxNpmBytes = 256ull << 20;
std::uint64_t max_npm_bytes_from_env();  // LOCKROOM_MAX_NPM_MIB, else the default

struct NpmLayerOptions {
  std::filesystem::path cache;
  std::vector<std::string> specs;  // normalised (kits/npm_spec.h); sorted and de-duplicated here
  std::uint64_t max_bytes = kDefaultMaxNpmBytes;
  std::string npm = "npm";         // the program run (found on PATH); tests point it elsewhere
};

struct NpmLayer {
  std::string key;                    // of the specs (and tarballs)
  std::filesystem::path cpio;         // the layer
  std::string lock_sha256;            // of package-lock.json: the resolved tree
  std::vector<std::string> specs;     // as asked, normalised
  std::vector<std::string> resolved;  // "name@version", every package installed
  std::vector<std::string> bins;      // the programs put in /usr/local/bin
  std::size_t files = 0;
  std::uint64_t unpacked_bytes = 0;
  std::uint64_t layer_bytes = 0;
  bool built = false;                 // npm ran for this call (false: found in the cache)
};

Result<NpmLayer> ensure_npm_layer(const NpmLayerOptions& options, const Progress& progress);

// The specs' key: the specs and every file: tarball's content (a missing tarball is an error).
Result<std::string> npm_layer_key(const std::vector<std::string>& specs);

std::filesystem::path npm_files_dir(const std::filesystem::path& cache);  // <cache>/npm

}  // namespace lockroom::vm::image
