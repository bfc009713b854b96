// The npm layer, built with the host's npm and cached; see npm_layer.h.
#include "server/vm/image/npm_layer.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "server/common/subprocess.h"
#include "server/kits/npm_spec.h"
#include "server/vm/image/initramfs.h"
#include "server/vm/image/npm_tree.h"
#include "server/vm/image/package_layer.h"
#include "server/vm/image/sha256.h"
#include "server/vm/image/temp_dir.h"
#include "server/vm/image/tool_output.h"

namespace lockroom::vm::image {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kLayerFormat = "1";

std::string mib(std::uint64_t bytes) {
  std::ostringstream out;
  out.precision(1);
  out << std::fixed << static_cast<double>(bytes) / (1024.0 * 1024.0) << " MiB";
  return out.str();
}

std::string spec_list(const std::vector<std::string>& specs) {
  std::string out;
  for (std::size_t i = 0; i < specs.size() && i < 4; ++i) out += (i ? ", " : "") + specs[i];
  return specs.size() > 4 ? out + ", …" : out;
}

std::string tail(const std::string& text) { return last_lines(text, 8); }

Result<void> write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) return make_error(ErrorCode::kUnavailable, "cannot write " + path.string() + " (disk full?)");
  return {};
}

Result<json> read_json(const fs::path& path) {
  auto text = read_host_file(path);
  if (!text) return text.error();
  auto j = json::parse(*text, nullptr, false);
  if (j.is_discarded()) return make_error(ErrorCode::kInvalidInput, path.string() + " is not JSON");
  return j;
}

// A cached layer, when complete.
Result<NpmLayer> load_layer(const fs::path& dir) {
  auto j = read_json(dir / "layer.json");
  if (!j) return j.error();
  if (!fs::exists(dir / "layer.cpio")) return make_error(ErrorCode::kNotFound, dir.string() + " has no layer.cpio");
  try {
    NpmLayer layer;
    layer.key = j->at("key").get<std::string>();
    layer.cpio = dir / "layer.cpio";
    layer.lock_sha256 = j->at("lockSha256").get<std::string>();
    layer.specs = j->at("specs").get<std::vector<std::string>>();
    layer.resolved = j->at("resolved").get<std::vector<std::string>>();
    layer.bins = j->at("bins").get<std::vector<std::string>>();
    layer.files = j->at("files").get<std::size_t>();
    layer.unpacked_bytes = j->at("unpackedBytes").get<std::uint64_t>();
    layer.layer_bytes = j->at("layerBytes").get<std::uint64_t>();
    return layer;
  } catch (const json::exception& e) {
    return make_error(ErrorCode::kInvalidInput, (dir / "layer.json").string() + " is not what lockroom writes: " + e.what());
  }
}

// npm's own words, the error kind they mean, and what to do.
Error npm_failed(const ProcessOutput& run, const std::vector<std::string>& specs) {
  bool unknown = run.output.find("E404") != std::string::npos || run.output.find("ETARGET") != std::string::npos;
  return make_error(unknown ? ErrorCode::kNotFound : ErrorCode::kUnavailable,
                    "npm could not install " + spec_list(specs) + " (exit " + std::to_string(run.exit_code) + "):" + tail(run.output) +
                        "\nlockroom runs this host's npm with its own configuration (~/.npmrc, NPM_CONFIG_REGISTRY…): check that "
                        "`npm view SPEC version` works here");
}

// The size of each top-level package folder ("@scope/name" counts as one), for the bound.
std::vector<std::pair<std::string, std::uint64_t>> package_sizes(const fs::path& modules) {
  std::map<std::string, std::uint64_t> sizes;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(modules, fs::directory_options::none, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->is_symlink(ec)) continue;
    auto rel = it->path().lexically_relative(modules);
    auto part = rel.begin();
    std::string name = part->string();
    if (!name.empty() && name[0] == '@' && std::next(part) != rel.end()) name += "/" + std::next(part)->string();
    sizes[name] += it->file_size(ec);
  }
  return {sizes.begin(), sizes.end()};
}

Result<std::uint64_t> check_npm_size(const fs::path& modules, std::uint64_t limit) {
  auto sizes = package_sizes(modules);
  std::uint64_t total = 0;
  for (const auto& [name, bytes] : sizes) total += bytes;
  if (total <= limit) return total;
  std::sort(sizes.begin(), sizes.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string biggest;
  for (std::size_t i = 0; i < sizes.size() && i < 5; ++i) biggest += (i ? ", " : "") + sizes[i].first + " " + mib(sizes[i].second);
  return make_error(ErrorCode::kLimitExceeded, "the npm packages take " + mib(total) + " unpacked, more than the " + mib(limit) +
                                                   " a guest image may add for them; the biggest: " + biggest +
                                                   ". Ask for fewer packages, or raise the limit (LOCKROOM_MAX_NPM_MIB) and the kit's memoryMiB");
}

// /usr/local/bin entries for the packages asked for; returns their names.
Result<std::vector<std::string>> link_bins(const fs::path& root, const std::vector<std::string>& packages) {
  fs::path modules = root / kNpmModulesDir;
  fs::path bin_dir = root / kNpmBinDir;
  std::error_code ec;
  fs::create_directories(bin_dir, ec);
  std::map<std::string, std::string> owner;
  std::vector<std::string> names;
  for (const auto& package : packages) {
    if (!kits::valid_npm_name(package))  // a tarball's package.json names it: checked before it names a path
      return make_error(ErrorCode::kInvalidInput, "npm installed a package named \"" + package + "\", which is not an npm package name");
    auto manifest = read_json(modules / package / "package.json");
    if (!manifest) return make_error(ErrorCode::kUnavailable, "npm installed " + package + " without a readable package.json: " + manifest.error().message);
    auto bins = npm_package_bins(package, *manifest);
    if (!bins) return bins.error();
    for (const auto& bin : *bins) {
      if (auto it = owner.find(bin.name); it != owner.end())
        return make_error(ErrorCode::kInvalidInput, "the npm packages " + it->second + " and " + package + " both have a program named \"" + bin.name +
                                                        "\"; keep one of them");
      owner[bin.name] = package;
      fs::path target = modules / package / bin.path;
      struct stat st {};
      if (stat(target.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || target.lexically_normal().string().rfind((modules / package).string(), 0) != 0)
        return make_error(ErrorCode::kInvalidInput, "the npm package " + package + " names the program \"" + bin.name + "\" at " + bin.path +
                                                        ", which it does not contain");
      chmod(target.c_str(), (st.st_mode & 07777) | 0755);  // as npm makes a bin executable
      std::ifstream in(target, std::ios::binary);
      std::string head(256, '\0');
      in.read(head.data(), static_cast<std::streamsize>(head.size()));
      head.resize(static_cast<std::size_t>(in.gcount()));
      fs::path entry = bin_dir / bin.name;
      if (npm_bin_runs_under_node(head)) {
        if (auto ok = write_file(entry, npm_node_wrapper(bin)); !ok) return ok.error();
        chmod(entry.c_str(), 0755);
      } else {
        fs::create_symlink(fs::path("../lib/node_modules") / package / bin.path, entry, ec);
        if (ec) return make_error(ErrorCode::kUnavailable, "cannot link " + entry.string() + ": " + ec.message());
      }
      names.push_back(bin.name);
    }
  }
  return names;
}

}  // namespace

std::uint64_t max_npm_bytes_from_env() {
  const char* value = std::getenv("LOCKROOM_MAX_NPM_MIB");
  if (!value || !*value) return kDefaultMaxNpmBytes;
  char* end = nullptr;
  unsigned long long mib_value = std::strtoull(value, &end, 10);
  if (*end || mib_value == 0 || mib_value > 64 * 1024) return kDefaultMaxNpmBytes;
  return mib_value << 20;
}

fs::path npm_files_dir(const fs::path& cache) { return cache / "npm"; }

Result<std::string> npm_layer_key(const std::vector<std::string>& specs) {
  Sha256 h;
  h.add("npm-layer-format", kLayerFormat);
  for (const auto& spec : specs) {
    h.add("spec", spec);
    if (auto file = kits::npm_spec_file(spec)) {
      if (!fs::is_regular_file(*file))
        return make_error(ErrorCode::kNotFound, "the npm package tarball " + file->string() + " (" + spec + ") does not exist");
      if (auto ok = h.add_file("tarball", *file); !ok) return ok.error();
    }
  }
  return h.hex_digest().substr(0, 16);
}

Result<NpmLayer> ensure_npm_layer(const NpmLayerOptions& options, const Progress& progress) {
  auto specs = kits::normalize_npm_set(options.specs);
  if (!specs) return specs.error();
  if (specs->empty()) return make_error(ErrorCode::kInvalidInput, "an npm layer needs at least one package");
  auto key = npm_layer_key(*specs);
  if (!key) return key.error();
  fs::path layers = npm_files_dir(options.cache) / "layers";
  fs::path final_dir = layers / *key;
  if (auto cached = load_layer(final_dir)) return cached;

  auto npm = find_program(options.npm);
  if (!npm)
    return make_error(ErrorCode::kUnavailable, "the kits ask for npm packages (" + spec_list(*specs) +
                                                   ") and this host has no npm to fetch them with: install it (`apt install npm`), or drop the kit's npm: list");
  auto work = TempDir::create(layers, ".build-");
  if (!work) return work.error();
  fs::path root = work->path() / "root";
  fs::path prefix = root / "usr/local/lib";
  std::error_code ec;
  fs::create_directories(prefix, ec);
  if (ec) return make_error(ErrorCode::kUnavailable, "cannot create " + prefix.string() + ": " + ec.message());

  progress("installing the npm packages " + spec_list(*specs) + " with this host's npm (its own configuration chooses the registry)");
  std::vector<std::string> argv = {"env",          "-C",          work->path().string(), npm->string(), "install",
                                   "--global=false", "--prefix",  prefix.string(),       "--omit=dev",  "--ignore-scripts",
                                   "--no-audit",   "--no-fund",   "--no-update-notifier"};
  argv.insert(argv.end(), specs->begin(), specs->end());
  auto run = run_capture(argv, 4u << 20);
  if (!run) return make_error(ErrorCode::kUnavailable, "cannot run npm: " + run.error().message);
  if (run->exit_code != 0) return npm_failed(*run, *specs);

  auto prefix_manifest = read_json(prefix / "package.json");
  auto lock_text = read_host_file(prefix / "package-lock.json");
  if (!prefix_manifest || !lock_text)
    return make_error(ErrorCode::kUnavailable, "npm install left no package.json and package-lock.json in its prefix:" + tail(run->output));
  auto lock = json::parse(*lock_text, nullptr, false);
  std::vector<std::string> packages = npm_installed_names(*prefix_manifest);
  if (packages.empty()) return make_error(ErrorCode::kUnavailable, "npm install installed nothing for " + spec_list(*specs) + ":" + tail(run->output));

  fs::path modules = root / kNpmModulesDir;
  auto unpacked = check_npm_size(modules, options.max_bytes);
  if (!unpacked) return unpacked.error();
  auto bins = link_bins(root, packages);
  if (!bins) return bins.error();
  // npm's bookkeeping stays out of the guest: the lock is kept beside the layer instead.
  for (const fs::path& p : {prefix / "package.json", prefix / "package-lock.json", modules / ".bin", modules / ".package-lock.json"})
    fs::remove_all(p, ec);
  for (const char* dir : {"usr", "usr/local", "usr/local/lib", "usr/local/bin", "usr/local/lib/node_modules"})
    fs::permissions(root / dir, fs::perms(0755), ec);

  progress("writing the npm layer");
  auto planned = plan_package_layer({UnpackedPackage{"npm packages", root}}, BaseIndex{});
  if (!planned) return planned.error();
  std::string cpio = planned->archive.bytes();

  NpmLayer layer;
  layer.key = *key;
  layer.lock_sha256 = sha256_hex(*lock_text);
  layer.specs = *specs;
  layer.resolved = npm_resolved_packages(lock, [&](const std::string& path) { return fs::is_directory(prefix / path); });
  layer.bins = *bins;
  layer.files = planned->files;
  layer.unpacked_bytes = *unpacked;
  layer.layer_bytes = cpio.size();
  layer.built = true;
  json meta{{"key", layer.key},     {"lockSha256", layer.lock_sha256}, {"specs", layer.specs},
            {"resolved", layer.resolved}, {"bins", layer.bins},     {"files", layer.files},
            {"unpackedBytes", layer.unpacked_bytes}, {"layerBytes", layer.layer_bytes}};
  fs::remove_all(root, ec);
  if (auto ok = write_file(work->path() / "layer.cpio", cpio); !ok) return ok.error();
  if (auto ok = write_file(work->path() / "package-lock.json", *lock_text); !ok) return ok.error();
  if (auto ok = write_file(work->path() / "layer.json", meta.dump(2) + "\n"); !ok) return ok.error();
  fs::rename(work->path(), final_dir, ec);
  if (ec) {
    if (auto other = load_layer(final_dir)) return other;  // another process made the same layer first
    return make_error(ErrorCode::kUnavailable, "cannot move the npm layer into " + final_dir.string() + ": " + ec.message());
  }
  layer.cpio = final_dir / "layer.cpio";
  progress("npm layer " + layer.key + " ready: " + std::to_string(layer.resolved.size()) + " packages, " + std::to_string(layer.files) + " files, " +
           mib(layer.layer_bytes));
  return layer;
}

}  // namespace lockroom::vm::image
