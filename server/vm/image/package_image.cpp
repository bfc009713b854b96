// ensure_package_image and the package cache; see package_image.h.
#include "server/vm/image/package_image.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>

#include "server/common/subprocess.h"
#include "server/vm/image/initramfs.h"
#include "server/vm/image/package_closure.h"
#include "server/vm/image/package_layer.h"
#include "server/vm/image/temp_dir.h"
#include "server/vm/image/tool_output.h"

namespace lockroom::vm::image {

namespace fs = std::filesystem;

namespace {

constexpr auto kResolvedFreshFor = std::chrono::hours(24);

std::string mib(std::uint64_t bytes) {
  std::ostringstream out;
  out.precision(1);
  out << std::fixed << static_cast<double>(bytes) / (1024.0 * 1024.0) << " MiB";
  return out.str();
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string tail(const std::string& text) { return last_lines(text, 6); }

Result<void> write_file_atomically(const fs::path& path, const std::string& bytes) {
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) return make_error(ErrorCode::kUnavailable, "cannot write " + tmp.string() + " (disk full?)");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return make_error(ErrorCode::kUnavailable, "cannot write " + path.string() + ": " + ec.message());
  return {};
}

const std::string kAptFix =
    "lockroom resolves and downloads kit packages with this host's apt (its sources, or APT_CONFIG's): "
    "check that `apt-get download PACKAGE` works here (try `sudo apt-get update`)";

// apt's closure for the set: asked of apt-get, or remembered from the last day.
Result<std::vector<PackageRef>> resolve_closure(const fs::path& cache, const std::vector<std::string>& packages, bool refresh,
                                                const Progress& progress) {
  fs::path remembered = package_files_dir(cache) / "resolved" / package_set_key(packages);
  std::error_code ec;
  auto age = fs::last_write_time(remembered, ec);
  bool have_remembered = !ec;
  auto from_memory = [&]() -> Result<std::vector<PackageRef>> {
    auto text = read_host_file(remembered);
    if (!text) return text.error();
    return closure_from_text(*text);
  };
  if (have_remembered && !refresh && fs::file_time_type::clock::now() - age < kResolvedFreshFor)
    if (auto closure = from_memory(); closure && !closure->empty()) return closure;

  if (!find_program("apt-get") || !find_program("dpkg-deb")) {
    if (have_remembered) {
      progress("apt-get or dpkg-deb is not installed; using apt's earlier answer for " + package_list_text(packages));
      return from_memory();
    }
    return make_error(ErrorCode::kUnavailable, "the kits ask for Debian packages (" + package_list_text(packages) +
                                                   ") and this host has no apt-get or dpkg-deb to fetch them");
  }
  progress("resolving the Debian packages " + package_list_text(packages) + " with apt");
  std::vector<std::string> argv = {"apt-get", "-s", "-q",
                                   "-o", "Dir::State::status=/dev/null",  // nothing counts as installed: the whole closure
                                   "-o", "APT::Install-Recommends=false",
                                   "-o", "APT::Install-Suggests=false",
                                   "install"};
  argv.insert(argv.end(), packages.begin(), packages.end());
  auto run = run_capture(argv, 8u << 20);
  if (!run) return make_error(ErrorCode::kUnavailable, "cannot run apt-get: " + run.error().message + ". " + kAptFix);
  auto closure = parse_simulated_install(run->output, run->exit_code);
  if (!closure) {
    if (closure.error().code == ErrorCode::kUnavailable && have_remembered) {
      progress("apt cannot resolve the packages now; using its earlier answer (" + closure.error().message + ")");
      return from_memory();
    }
    return closure.error();
  }
  if (closure->empty()) return make_error(ErrorCode::kInternal, "apt-get resolved " + package_list_text(packages) + " to no packages at all:" + tail(run->output));
  fs::create_directories(remembered.parent_path(), ec);
  (void)write_file_atomically(remembered, closure_to_text(*closure));
  return closure;
}

// The sizes apt knows, for the bound before anything is downloaded (none when apt-cache fails).
std::vector<PackageSize> closure_sizes(const std::vector<PackageRef>& closure) {
  if (!find_program("apt-cache")) return {};
  std::vector<std::string> argv = {"apt-cache", "show", "--no-all-versions"};
  for (const auto& r : closure) argv.push_back(r.name + "=" + r.version);
  auto run = run_capture(argv, 32u << 20);
  if (!run || run->exit_code != 0) return {};
  // One record per package asked for (apt may print a version once per source).
  std::vector<PackageSize> sizes;
  for (auto& s : parse_package_records(run->output))
    if (std::none_of(sizes.begin(), sizes.end(), [&](const PackageSize& x) { return x.name == s.name; })) sizes.push_back(std::move(s));
  return sizes;
}

// The .debs of the closure in `<cache>/packages/debs/`, downloading those not there yet.
Result<std::vector<fs::path>> fetch_debs(const fs::path& cache, const std::vector<PackageRef>& closure, const std::vector<PackageSize>& sizes,
                                         const Progress& progress) {
  fs::path debs = package_files_dir(cache) / "debs";
  std::vector<std::string> missing;
  std::uint64_t bytes = 0;
  for (const auto& r : closure)
    if (!fs::exists(debs / deb_file_name(r))) {
      missing.push_back(r.name + "=" + r.version);
      for (const auto& s : sizes)
        if (s.name == r.name.substr(0, r.name.find(':'))) bytes += s.download_bytes;
    }
  if (!missing.empty()) {
    auto work = TempDir::create(package_files_dir(cache), ".download-");
    if (!work) return work.error();
    progress("downloading " + std::to_string(missing.size()) + " Debian package" + (missing.size() == 1 ? "" : "s") +
             (bytes ? " (" + mib(bytes) + ")" : std::string()) + " with apt-get");
    std::vector<std::string> argv = {"env", "-C", work->path().string(), "apt-get", "download", "-q"};
    argv.insert(argv.end(), missing.begin(), missing.end());
    auto run = run_capture(argv);
    if (!run) return make_error(ErrorCode::kUnavailable, "cannot run apt-get download: " + run.error().message + ". " + kAptFix);
    if (run->exit_code != 0)
      return make_error(ErrorCode::kUnavailable, "apt-get download failed (exit " + std::to_string(run->exit_code) + "):" + tail(run->output) + "\n" + kAptFix);
    std::error_code ec;
    fs::create_directories(debs, ec);
    for (const auto& r : closure) {
      fs::path got = work->path() / deb_file_name(r);
      if (!fs::exists(got)) continue;
      fs::rename(got, debs / deb_file_name(r), ec);
      if (ec) return make_error(ErrorCode::kUnavailable, "cannot move " + got.string() + " into " + debs.string() + ": " + ec.message());
    }
  }
  std::vector<fs::path> files;
  for (const auto& r : closure) {
    fs::path file = debs / deb_file_name(r);
    if (!fs::exists(file))
      return make_error(ErrorCode::kUnavailable, "apt-get download left no " + deb_file_name(r) + " for " + r.name + " " + r.version + ". " + kAptFix);
    files.push_back(file);
  }
  return files;
}

// Debian's Python packages ship no bytecode (their postinst compiles it, and postinsts are not
// run), so every fresh guest would compile the modules it imports on first use (`python3 -c
// pass`: 1.75 s instead of 0.54 s under TCG). When the host's python3 is the same minor version
// as the packages', it compiles them here, as unchecked-hash .pyc files (the layer's files have
// no meaningful mtimes). Best effort: a file that does not compile stays source only.
void precompile_python(const std::vector<UnpackedPackage>& unpacked, const Progress& progress) {
  auto python = find_program("python3");
  if (!python) return;
  auto version = run_capture({python->string(), "-c", "import sys; print('python%d.%d' % sys.version_info[:2])"});
  if (!version || version->exit_code != 0) return;
  std::string name = version->output.substr(0, version->output.find('\n'));
  std::vector<std::pair<fs::path, fs::path>> trees;  // package root, folder to compile
  for (const auto& package : unpacked)
    for (const fs::path& dir : {fs::path("usr/lib") / name, fs::path("usr/lib/python3/dist-packages")})
      if (fs::is_directory(package.root / dir)) trees.emplace_back(package.root, package.root / dir);
  // Only for the same interpreter: its standard library must be among the packages.
  if (std::none_of(trees.begin(), trees.end(), [&](const auto& t) { return t.second.filename() == name; })) return;
  progress("compiling the packages' Python modules with the host's " + name);
  for (const auto& [root, dir] : trees)
    (void)run_capture({python->string(), "-m", "compileall", "-q", "-s", root.string(), "-p", "/", "--invalidation-mode", "unchecked-hash",
                       dir.string()});
}

}  // namespace

std::uint64_t max_package_bytes_from_env() {
  const char* value = std::getenv("LOCKROOM_MAX_PACKAGE_MIB");
  if (!value || !*value) return kDefaultMaxPackageBytes;
  char* end = nullptr;
  unsigned long long mib_value = std::strtoull(value, &end, 10);
  if (*end || mib_value == 0 || mib_value > 64 * 1024) return kDefaultMaxPackageBytes;
  return mib_value << 20;
}

fs::path package_images_dir(const fs::path& cache) { return images_dir(cache) / "packages"; }
fs::path package_files_dir(const fs::path& cache) { return cache / "packages"; }

Result<GuestImage> ensure_package_image(const GuestImage& base, const PackageImageOptions& options, const Progress& progress) {
  auto packages = normalize_package_set(options.packages);
  if (!packages) return packages.error();
  if (packages->empty()) return base;
  auto closure = resolve_closure(options.cache, *packages, options.refresh, progress);
  if (!closure) return closure.error();

  std::string key = package_image_key(base.manifest.hash, *packages, *closure);
  fs::path final_dir = package_images_dir(options.cache) / key;
  if (auto existing = load_image(final_dir)) return existing;

  auto sizes = closure_sizes(*closure);
  if (auto ok = check_package_sizes(sizes, options.max_bytes, "installed"); !ok) return ok.error();
  auto debs = fetch_debs(options.cache, *closure, sizes, progress);
  if (!debs) return debs.error();

  auto work = TempDir::create(package_images_dir(options.cache), ".build-");
  if (!work) return work.error();
  progress("unpacking " + std::to_string(closure->size()) + " Debian packages (their maintainer scripts are not run)");
  std::vector<UnpackedPackage> unpacked;
  for (std::size_t i = 0; i < closure->size(); ++i) {
    const auto& ref = (*closure)[i];
    fs::path root = work->path() / "unpacked" / (std::to_string(i) + "-" + ref.name.substr(0, ref.name.find(':')));
    std::error_code ec;
    fs::create_directories(root, ec);
    if (ec) return make_error(ErrorCode::kUnavailable, "cannot create " + root.string() + ": " + ec.message());
    auto x = run_capture({"dpkg-deb", "-x", (*debs)[i].string(), root.string()});
    if (!x || x->exit_code != 0) {
      fs::remove((*debs)[i], ec);  // fetched again next time
      return make_error(ErrorCode::kUnavailable, "cannot unpack " + (*debs)[i].filename().string() + " with dpkg-deb" +
                                                     (x ? ":" + tail(x->output) : ": " + x.error().message) + "\nIt was removed; try again to download it anew");
    }
    unpacked.push_back({ref.name, root});
  }

  precompile_python(unpacked, progress);

  auto base_initrd = read_host_file(base.initrd());
  if (!base_initrd) return base_initrd.error();
  auto index = read_initrd_index(*base_initrd);
  if (!index) return make_error(index.error().code, base.initrd().string() + ": " + index.error().message);
  progress("writing the package layer");
  auto layer = plan_package_layer(unpacked, *index);
  if (!layer) return layer.error();
  if (auto ok = check_package_sizes(layer->unpacked, options.max_bytes, "unpacked"); !ok) return ok.error();
  fs::remove_all(work->path() / "unpacked");
  std::string layer_bytes = layer->archive.bytes();
  std::size_t layer_size = layer_bytes.size();
  if (!layer->base_kept.empty())
    progress("kept " + std::to_string(layer->paths_kept_from_base) + " files the base image already has (from " +
             package_list_text(layer->base_kept, 4) + ")");
  std::string initrd = std::move(*base_initrd);
  initrd += layer_bytes;  // the kernel unpacks concatenated newc archives in order
  layer_bytes.clear();
  if (auto ok = write_file_atomically(work->path() / "initrd", initrd); !ok) return ok.error();

  std::error_code ec;
  fs::create_hard_link(base.kernel(), work->path() / "kernel", ec);
  if (ec) fs::copy_file(base.kernel(), work->path() / "kernel", ec);
  if (ec) return make_error(ErrorCode::kUnavailable, "cannot copy the kernel into " + work->path().string() + ": " + ec.message());

  ImageManifest m = base.manifest;
  m.hash = key;
  m.initrd_bytes = initrd.size();
  m.created = utc_now();
  ManifestPackages p;
  p.base_hash = base.manifest.hash;
  p.requested = *packages;
  for (const auto& r : *closure) p.resolved.push_back(r.name + "=" + r.version);
  p.layer_bytes = layer_size;
  p.files = layer->files;
  m.packages = std::move(p);
  if (auto ok = write_file_atomically(work->path() / "manifest.json", manifest_to_json(m).dump(2) + "\n"); !ok) return ok.error();

  fs::rename(work->path(), final_dir, ec);
  if (ec) {
    if (auto other = load_image(final_dir)) return other;  // another process finished the same image first
    return make_error(ErrorCode::kUnavailable, "cannot move the package image into " + final_dir.string() + ": " + ec.message());
  }
  progress("package image " + key + " ready: " + std::to_string(layer->files) + " files, layer " + mib(layer_size) + " on image " +
           base.manifest.hash);
  return load_image(final_dir);
}

std::vector<GuestImage> list_package_images(const fs::path& cache) {
  std::vector<GuestImage> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(package_images_dir(cache), ec)) {
    if (!entry.is_directory() || entry.path().filename().string().front() == '.') continue;
    if (auto image = load_image(entry.path())) out.push_back(std::move(*image));
  }
  std::sort(out.begin(), out.end(), [](const GuestImage& a, const GuestImage& b) { return a.manifest.created > b.manifest.created; });
  return out;
}

PackagePrune prune_package_images(const fs::path& cache) {
  PackagePrune pruned;
  std::error_code ec;
  auto count_bytes = [&](const fs::path& dir) {
    std::uint64_t bytes = 0;
    std::error_code walk_ec;
    for (fs::recursive_directory_iterator it(dir, walk_ec), end; !walk_ec && it != end; it.increment(walk_ec))
      if (it->is_regular_file(walk_ec) && it->path().filename() != "kernel") bytes += it->file_size(walk_ec);  // the kernel is the base's, linked
    return bytes;
  };
  for (const auto& entry : fs::directory_iterator(package_images_dir(cache), ec)) {
    if (!entry.is_directory()) continue;
    if (entry.path().filename().string().front() != '.') ++pruned.images;
    pruned.bytes += count_bytes(entry.path());
    fs::remove_all(entry.path(), ec);
  }
  for (const auto& entry : fs::directory_iterator(package_files_dir(cache) / "debs", ec))
    if (entry.path().extension() == ".deb") ++pruned.debs;
  pruned.bytes += count_bytes(package_files_dir(cache));
  fs::remove_all(package_files_dir(cache), ec);
  return pruned;
}

}  // namespace lockroom::vm::image
