// The npm layer (vm/image/npm_layer.h, npm_image.h) built by a REAL `npm install` on this host:
// two tiny packages packed with `npm pack` and installed from their tarballs (offline: no
// registry is asked). The host's npm is run through a wrapper that counts its runs, so the
// cache hit is checked as "npm did not run", not guessed from timings.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include "server/common/subprocess.h"
#include "server/vm/image/cpio_writer.h"
#include "server/vm/image/initramfs.h"
#include "server/vm/image/npm_image.h"
#include "server/vm/image/npm_tree.h"
#include "server/vm/image/package_layer.h"
#include "tests/support/npm_tarball.h"

namespace img = lockroom::vm::image;
namespace fs = std::filesystem;
using lockroom::testing::NpmProgram;
using lockroom::testing::pack_npm_package;
using lockroom::testing::read_file;
using lockroom::testing::sh;
using lockroom::testing::TempDir;

namespace {

const img::Progress kQuiet = [](const std::string&) {};

// An `npm` that notes each run in `count` and runs the host's npm.
fs::path counting_npm(const TempDir& dir, const fs::path& count) {
  auto npm = lockroom::find_program("npm");
  REQUIRE(npm);  // the test is about the real npm: it must be installed (apt install npm)
  fs::path script = dir.write("counting-npm", "#!/bin/sh\necho run >> '" + count.string() + "'\nexec '" + npm->string() + "' \"$@\"\n");
  REQUIRE(chmod(script.c_str(), 0755) == 0);
  return script;
}

std::size_t runs(const fs::path& count) {
  std::string text = fs::exists(count) ? read_file(count) : "";
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

TEST_CASE("npm layer: a real npm install from tarballs lays packages and their programs under /usr/local, cached", "[vm][npm]") {
  TempDir work("lockroom-npm-layer");
  fs::path hello = pack_npm_package(work, "lockroom-hello", {{"lockroom-hello", "bin/hello.js", "#!/usr/bin/env node\nconsole.log('hello from ' + process.argv[2]);\n"}});
  fs::path tool = pack_npm_package(work, "lockroom-shtool", {{"shtool", "bin/shtool", "#!/bin/sh\necho shtool \"$@\"\n"}});
  fs::path count = work / "npm-runs";
  img::NpmLayerOptions options;
  options.cache = work / "cache";
  options.specs = {"file:" + tool.string(), "file:" + hello.string()};
  options.npm = counting_npm(work, count).string();
  std::vector<std::string> progress;

  auto layer = img::ensure_npm_layer(options, [&](const std::string& line) { progress.push_back(line); });
  INFO((layer ? "" : layer.error().message));
  REQUIRE(layer);
  CHECK(layer->built);
  CHECK(runs(count) == 1);
  CHECK(layer->resolved == std::vector<std::string>{"lockroom-hello@1.0.0", "lockroom-shtool@1.0.0"});
  CHECK(layer->bins == std::vector<std::string>{"lockroom-hello", "shtool"});
  CHECK(layer->lock_sha256.size() == 64);
  CHECK(fs::exists(options.cache / "npm/layers" / layer->key / "package-lock.json"));
  REQUIRE_FALSE(progress.empty());
  CHECK_THAT(progress.front(), Catch::Contains("with this host's npm"));

  // The layer, read back: the packages under node_modules, a node wrapper and a symlink in bin,
  // and none of npm's bookkeeping.
  auto cpio = img::read_host_file(layer->cpio);
  REQUIRE(cpio);
  CHECK(cpio->size() == layer->layer_bytes);
  auto index = img::read_initrd_index(*cpio);
  REQUIRE(index);
  CHECK(index->count("usr/local/lib/node_modules/lockroom-hello/package.json"));
  REQUIRE(index->count("usr/local/lib/node_modules/lockroom-hello/bin/hello.js"));
  CHECK((index->at("usr/local/lib/node_modules/lockroom-hello/bin/hello.js").mode & 0111) != 0);
  REQUIRE(index->count("usr/local/bin/lockroom-hello"));
  CHECK(S_ISREG(index->at("usr/local/bin/lockroom-hello").mode));
  REQUIRE(index->count("usr/local/bin/shtool"));
  CHECK(S_ISLNK(index->at("usr/local/bin/shtool").mode));
  CHECK(index->at("usr/local/bin/shtool").target == "../lib/node_modules/lockroom-shtool/bin/shtool");
  CHECK(index->at("usr/local/lib/node_modules").mode == (S_IFDIR | 0755));
  CHECK_FALSE(index->count("usr/local/lib/package.json"));
  CHECK_FALSE(index->count("usr/local/lib/package-lock.json"));
  CHECK_FALSE(index->count("usr/local/lib/node_modules/.bin"));
  // The wrapper runs the program with node, by its place in the guest.
  TempDir unpacked("lockroom-npm-unpacked");
  sh("cd '" + unpacked.path().string() + "' && cpio -id --quiet < '" + layer->cpio.string() + "'");
  CHECK(read_file(unpacked / "usr/local/bin/lockroom-hello") ==
        "#!/bin/sh\n# lockroom-hello from the npm package lockroom-hello (a kit's npm: layer, made by lockroom)\n"
        "exec node '/usr/local/lib/node_modules/lockroom-hello/bin/hello.js' \"$@\"\n");
  CHECK(sh("node '" + (unpacked / "usr/local/lib/node_modules/lockroom-hello/bin/hello.js").string() + "' host") == "hello from host\n");

  // The same specs again (in another order): the cached layer, and npm is not run.
  options.specs = {"file:" + hello.string(), "file:" + tool.string()};
  auto again = img::ensure_npm_layer(options, kQuiet);
  REQUIRE(again);
  CHECK_FALSE(again->built);
  CHECK(again->key == layer->key);
  CHECK(again->lock_sha256 == layer->lock_sha256);
  CHECK(runs(count) == 1);

  // A tarball with other bytes is another layer.
  fs::path hello2 = pack_npm_package(work, "lockroom-hello", {{"lockroom-hello", "bin/hello.js", "#!/usr/bin/env node\nconsole.log('changed');\n"}});
  REQUIRE(hello2 == hello);  // same name, same file, new content
  options.specs = {"file:" + hello.string()};
  auto changed = img::ensure_npm_layer(options, kQuiet);
  REQUIRE(changed);
  CHECK(changed->built);
  CHECK(changed->key != layer->key);
  CHECK(runs(count) == 2);
}

TEST_CASE("npm layer: no npm on the host, a missing tarball and the size bound are clear errors", "[vm][npm]") {
  TempDir work("lockroom-npm-errors");
  fs::path hello = pack_npm_package(work, "lockroom-hello", {{"lockroom-hello", "bin/hello.js", "#!/usr/bin/env node\nconsole.log(1);\n"}});
  img::NpmLayerOptions options;
  options.cache = work / "cache";
  options.specs = {"file:" + hello.string()};

  options.npm = "lockroom-test-no-such-npm";
  auto missing = img::ensure_npm_layer(options, kQuiet);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == lockroom::ErrorCode::kUnavailable);
  CHECK_THAT(missing.error().message, Catch::Contains("this host has no npm") && Catch::Contains("apt install npm") &&
                                          Catch::Contains("lockroom-hello-1.0.0.tgz"));

  options.npm = "npm";
  options.specs = {"file:" + (work / "nowhere-1.0.0.tgz").string()};
  auto no_tarball = img::ensure_npm_layer(options, kQuiet);
  REQUIRE_FALSE(no_tarball);
  CHECK(no_tarball.error().code == lockroom::ErrorCode::kNotFound);
  CHECK_THAT(no_tarball.error().message, Catch::Contains("nowhere-1.0.0.tgz") && Catch::Contains("does not exist"));

  options.specs = {"file:" + hello.string()};
  options.max_bytes = 16;
  auto big = img::ensure_npm_layer(options, kQuiet);
  REQUIRE_FALSE(big);
  CHECK(big.error().code == lockroom::ErrorCode::kLimitExceeded);
  CHECK_THAT(big.error().message, Catch::Contains("LOCKROOM_MAX_NPM_MIB") && Catch::Contains("lockroom-hello"));
}

TEST_CASE("npm image: the parent's initrd with the layer appended, listed and pruned", "[vm][npm]") {
  TempDir work("lockroom-npm-image");
  fs::path hello = pack_npm_package(work, "lockroom-hello", {{"lockroom-hello", "bin/hello.js", "#!/usr/bin/env node\nconsole.log(1);\n"}});
  fs::path cache = work / "cache";
  // A stand-in parent image: a kernel file and a one-file initrd.
  img::ImageManifest m;
  m.hash = "0123456789abcdef";
  m.created = "2026-01-01T00:00:00Z";
  fs::path parent_dir = img::images_dir(cache) / m.hash;
  fs::create_directories(parent_dir);
  img::CpioArchive base;
  REQUIRE(base.add_file("init", "#!/bin/sh\n", 0755));
  work.write("cache/images/" + m.hash + "/initrd", base.bytes());
  work.write("cache/images/" + m.hash + "/kernel", "not really a kernel");
  work.write("cache/images/" + m.hash + "/manifest.json", img::manifest_to_json(m).dump());
  auto parent = img::load_image(parent_dir);
  REQUIRE(parent);

  img::NpmLayerOptions options;
  options.cache = cache;
  options.specs = {"file:" + hello.string()};
  auto image = img::ensure_npm_image(*parent, options, kQuiet);
  INFO((image ? "" : image.error().message));
  REQUIRE(image);
  REQUIRE(image->manifest.npm);
  CHECK(image->manifest.npm->base_hash == m.hash);
  CHECK(image->manifest.npm->requested == options.specs);
  CHECK(image->manifest.npm->resolved == std::vector<std::string>{"lockroom-hello@1.0.0"});
  CHECK(image->manifest.hash != m.hash);
  auto initrd = img::read_host_file(image->initrd());
  REQUIRE(initrd);
  std::string base_bytes = base.bytes();
  CHECK(initrd->compare(0, base_bytes.size(), base_bytes) == 0);
  CHECK(initrd->size() == base_bytes.size() + image->manifest.npm->layer_bytes);
  // Found again, not rebuilt: the same folder.
  auto again = img::ensure_npm_image(*parent, options, kQuiet);
  REQUIRE(again);
  CHECK(again->dir == image->dir);
  // Without specs, the parent itself.
  options.specs.clear();
  auto none = img::ensure_npm_image(*parent, options, kQuiet);
  REQUIRE(none);
  CHECK(none->dir == parent->dir);

  REQUIRE(img::list_npm_images(cache).size() == 1);
  auto pruned = img::prune_npm_images(cache);
  CHECK(pruned.images == 1);
  CHECK(pruned.layers == 1);
  CHECK(pruned.bytes > 0);
  CHECK(img::list_npm_images(cache).empty());
  CHECK_FALSE(fs::exists(img::npm_files_dir(cache)));
}
