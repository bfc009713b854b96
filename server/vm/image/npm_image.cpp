// npm images and their cache; see npm_image.h.
#include "server/vm/image/npm_image.h"

#include <algorithm>
#include <ctime>
#include <fstream>

#include "server/vm/image/initramfs.h"
#include "server/vm/image/sha256.h"
#include "server/vm/image/temp_dir.h"

namespace lockroom::vm::image {

namespace fs = std::filesystem;

namespace {

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

Result<void> write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) return make_error(ErrorCode::kUnavailable, "cannot write " + path.string() + " (disk full?)");
  return {};
}

std::string npm_image_key(const std::string& parent_hash, const NpmLayer& layer) {
  Sha256 h;
  h.add("npm-image-format", "1");
  h.add("parent", parent_hash);
  h.add("layer", layer.key);
  h.add("lock", layer.lock_sha256);
  return h.hex_digest().substr(0, 16);
}

std::uint64_t bytes_under(const fs::path& dir) {
  std::uint64_t bytes = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec) && it->path().filename() != "kernel") bytes += it->file_size(ec);  // the kernel is the parent's, linked
  return bytes;
}

}  // namespace

fs::path npm_images_dir(const fs::path& cache) { return images_dir(cache) / "npm"; }

Result<GuestImage> ensure_npm_image(const GuestImage& parent, const NpmLayerOptions& options, const Progress& progress) {
  if (options.specs.empty()) return parent;
  auto layer = ensure_npm_layer(options, progress);
  if (!layer) return layer.error();
  std::string key = npm_image_key(parent.manifest.hash, *layer);
  fs::path final_dir = npm_images_dir(options.cache) / key;
  if (auto existing = load_image(final_dir)) return existing;

  auto work = TempDir::create(npm_images_dir(options.cache), ".build-");
  if (!work) return work.error();
  auto initrd = read_host_file(parent.initrd());
  if (!initrd) return initrd.error();
  auto cpio = read_host_file(layer->cpio);
  if (!cpio) return cpio.error();
  progress("putting the npm layer on image " + parent.manifest.hash);
  *initrd += *cpio;  // the kernel unpacks concatenated newc archives in order
  cpio->clear();
  if (auto ok = write_file(work->path() / "initrd", *initrd); !ok) return ok.error();
  std::error_code ec;
  fs::create_hard_link(parent.kernel(), work->path() / "kernel", ec);
  if (ec) fs::copy_file(parent.kernel(), work->path() / "kernel", ec);
  if (ec) return make_error(ErrorCode::kUnavailable, "cannot copy the kernel into " + work->path().string() + ": " + ec.message());

  ImageManifest m = parent.manifest;
  m.hash = key;
  m.initrd_bytes = initrd->size();
  m.created = utc_now();
  m.npm = ManifestNpm{parent.manifest.hash, layer->specs, layer->resolved, layer->lock_sha256, layer->layer_bytes, layer->files};
  if (auto ok = write_file(work->path() / "manifest.json", manifest_to_json(m).dump(2) + "\n"); !ok) return ok.error();
  fs::rename(work->path(), final_dir, ec);
  if (ec) {
    if (auto other = load_image(final_dir)) return other;  // another process finished the same image first
    return make_error(ErrorCode::kUnavailable, "cannot move the npm image into " + final_dir.string() + ": " + ec.message());
  }
  progress("npm image " + key + " ready on image " + parent.manifest.hash);
  return load_image(final_dir);
}

std::vector<GuestImage> list_npm_images(const fs::path& cache) {
  std::vector<GuestImage> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(npm_images_dir(cache), ec)) {
    if (!entry.is_directory() || entry.path().filename().string().front() == '.') continue;
    if (auto image = load_image(entry.path())) out.push_back(std::move(*image));
  }
  std::sort(out.begin(), out.end(), [](const GuestImage& a, const GuestImage& b) { return a.manifest.created > b.manifest.created; });
  return out;
}

NpmPrune prune_npm_images(const fs::path& cache) {
  NpmPrune pruned;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(npm_images_dir(cache), ec)) {
    if (!entry.is_directory()) continue;
    if (entry.path().filename().string().front() != '.') ++pruned.images;
    pruned.bytes += bytes_under(entry.path());
    fs::remove_all(entry.path(), ec);
  }
  for (const auto& entry : fs::directory_iterator(npm_files_dir(cache) / "layers", ec))
    if (entry.is_directory() && entry.path().filename().string().front() != '.') ++pruned.layers;
  pruned.bytes += bytes_under(npm_files_dir(cache));
  fs::remove_all(npm_files_dir(cache), ec);
  return pruned;
}

}  // namespace lockroom::vm::image
