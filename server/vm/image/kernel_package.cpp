// ensure_kernel and its parsers; see kernel_package.h.
#include "server/vm/image/kernel_package.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

#include "server/common/subprocess.h"
#include "server/vm/image/temp_dir.h"

namespace lockroom::vm::image {

namespace fs = std::filesystem;

namespace {

constexpr const char* kCompleteMarker = ".lockroom-complete";

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  return s.substr(start);
}

std::string last_lines(const std::string& text, std::size_t n = 6) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (!trim(line).empty()) lines.push_back(line);
  std::string out;
  for (std::size_t i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); ++i) out += "\n    " + lines[i];
  return out;
}

Result<std::string> run_ok(const std::vector<std::string>& argv, const std::string& what, const std::string& fix) {
  auto run = run_capture(argv);
  if (!run) return make_error(ErrorCode::kUnavailable, what + ": " + run.error().message + ". " + fix);
  if (run->exit_code != 0)
    return make_error(ErrorCode::kUnavailable,
                      what + " failed (exit " + std::to_string(run->exit_code) + "):" + last_lines(run->output) + "\n" + fix);
  return std::move(run->output);
}

// The newest kernel unpacked earlier, for when apt cannot be asked.
std::optional<KernelTree> newest_cached(const fs::path& kernels_dir) {
  std::error_code ec;
  std::vector<fs::path> found;
  for (const auto& entry : fs::directory_iterator(kernels_dir, ec))
    if (fs::exists(entry.path() / kCompleteMarker)) found.push_back(entry.path());
  if (found.empty()) return std::nullopt;
  std::sort(found.begin(), found.end());
  std::string name = found.back().filename().string();  // PACKAGE_VERSION
  std::size_t underscore = name.find('_');
  if (underscore == std::string::npos) return std::nullopt;
  KernelTree tree{name.substr(0, underscore), name.substr(underscore + 1), kernel_release_of(name.substr(0, underscore)),
                  found.back()};
  return tree;
}

Result<void> unpack(const KernelTree& want, const fs::path& busybox, const fs::path& kernels_dir, const Progress& progress) {
  const std::string apt_fix =
      "The guest kernel comes from the Debian package " + want.package +
      ": check that `apt-get download " + want.package + "` works on this host (try `sudo apt-get update`).";
  auto work = TempDir::create(kernels_dir, ".fetch-");
  if (!work) return work.error();
  progress("downloading " + want.package + " " + want.package_version + " with apt-get");
  if (auto dl = run_ok({"env", "-C", work->path().string(), "apt-get", "download", "-q", want.package + "=" + want.package_version},
                       "apt-get download " + want.package, apt_fix);
      !dl)
    return dl.error();
  fs::path deb;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(work->path(), ec))
    if (entry.path().extension() == ".deb") deb = entry.path();
  if (deb.empty()) return make_error(ErrorCode::kUnavailable, "apt-get download left no .deb file. " + apt_fix);

  progress("unpacking " + deb.filename().string());
  fs::path tree = work->path() / "tree";
  if (auto x = run_ok({"dpkg-deb", "-x", deb.string(), tree.string()}, "dpkg-deb -x " + deb.filename().string(),
                      "The downloaded package may be damaged; run `lockroom image build --force` to fetch it again.");
      !x)
    return x.error();
  fs::remove(deb, ec);
  if (!fs::exists(tree / "boot" / ("vmlinuz-" + want.release)) || !fs::is_directory(tree / "lib/modules" / want.release))
    return make_error(ErrorCode::kUnavailable, want.package + " has no boot/vmlinuz-" + want.release + " or lib/modules/" +
                                                   want.release + "; it is not a kernel package lockroom understands");

  progress("indexing kernel modules (depmod)");
  std::vector<std::string> depmod = {"depmod", "-b", tree.string(), want.release};
  if (!find_program("depmod") && !find_program("/sbin/depmod")) depmod.insert(depmod.begin(), busybox.string());
  if (auto d = run_ok(depmod, "depmod", "Install kmod (`sudo apt-get install kmod`) or busybox-static."); !d) return d.error();
  if (!fs::exists(tree / "lib/modules" / want.release / "modules.dep"))
    return make_error(ErrorCode::kInternal, "depmod wrote no modules.dep for " + want.release);

  FILE* marker = std::fopen((tree / kCompleteMarker).c_str(), "w");
  if (marker) std::fclose(marker);
  fs::path final_dir = kernels_dir / (want.package + "_" + want.package_version);
  fs::rename(tree, final_dir, ec);
  if (ec && !fs::exists(final_dir / kCompleteMarker))  // someone else finishing first is fine
    return make_error(ErrorCode::kUnavailable, "cannot move the kernel into " + final_dir.string() + ": " + ec.message());
  return {};
}

}  // namespace

std::optional<KernelChoice> parse_kernel_dependency(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    std::string t = trim(line);
    if (t.rfind("Depends:", 0) != 0) continue;
    // "Depends: linux-image-6.1.0-57-amd64 (= 6.1.192-3), other" or, from `apt-cache depends`,
    // "Depends: linux-image-6.1.0-57-amd64".
    std::istringstream alternatives(t.substr(8));
    std::string item;
    while (std::getline(alternatives, item, ',')) {
      item = trim(item.substr(0, item.find('|')));
      std::size_t space = item.find(' ');
      std::string name = item.substr(0, space);
      if (name.rfind("linux-image-", 0) != 0) continue;
      KernelChoice choice{name, std::nullopt};
      std::size_t eq = item.find("(=");
      if (eq != std::string::npos && item.back() == ')') choice.version = trim(item.substr(eq + 2, item.size() - eq - 3));
      return choice;
    }
  }
  return std::nullopt;
}

std::optional<std::string> parse_version_field(std::string_view record) {
  std::istringstream in{std::string(record)};
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("Version:", 0) == 0) return trim(line.substr(8));
  return std::nullopt;
}

std::string kernel_release_of(std::string_view package) {
  constexpr std::string_view prefix = "linux-image-";
  if (package.substr(0, prefix.size()) == prefix) package.remove_prefix(prefix.size());
  return std::string(package);
}

Result<KernelTree> ensure_kernel(const fs::path& kernels_dir, const fs::path& busybox, bool refresh, const Progress& progress) {
  std::error_code ec;
  fs::create_directories(kernels_dir, ec);
  if (ec) return make_error(ErrorCode::kUnavailable, "cannot create " + kernels_dir.string() + ": " + ec.message());

  auto offline = [&](const std::string& why) -> Result<KernelTree> {
    if (auto cached = newest_cached(kernels_dir)) {
      progress(why + "; using the kernel unpacked earlier (" + cached->package + " " + cached->package_version + ")");
      return *cached;
    }
    return make_error(ErrorCode::kUnavailable,
                      why + ". lockroom fetches its guest kernel with apt from Debian's " + std::string(kKernelMetaPackage) +
                          " package: on a Debian or Ubuntu host run `sudo apt-get update`, then `lockroom image build`.");
  };
  if (!find_program("apt-cache") || !find_program("apt-get") || !find_program("dpkg-deb"))
    return offline("apt-get, apt-cache or dpkg-deb is not installed");

  // Asking apt costs seconds on a busy host: an answer from the last day is reused unless refreshing.
  fs::path resolved = kernels_dir / ".resolved";
  std::optional<KernelChoice> choice;
  if (!refresh) {
    auto age = fs::last_write_time(resolved, ec);
    if (!ec && fs::file_time_type::clock::now() - age < std::chrono::hours(24)) {
      std::ifstream in(resolved);
      KernelChoice cached;
      std::string version;
      if (in >> cached.package >> version && fs::exists(kernels_dir / (cached.package + "_" + version) / kCompleteMarker)) {
        cached.version = version;
        choice = cached;
      }
    }
  }
  if (!choice) {
    progress("asking apt which kernel " + std::string(kKernelMetaPackage) + " is");
    auto meta = run_capture({"apt-cache", "show", "--no-all-versions", kKernelMetaPackage});
    if (meta && meta->exit_code == 0) choice = parse_kernel_dependency(meta->output);
    if (!choice) return offline("apt does not know the package " + std::string(kKernelMetaPackage));
    if (!choice->version) {
      auto show = run_capture({"apt-cache", "show", "--no-all-versions", choice->package});
      if (show && show->exit_code == 0) choice->version = parse_version_field(show->output);
      if (!choice->version) return offline("apt knows no version of " + choice->package);
    }
  }
  const std::string* package = &choice->package;
  const std::string* version = &*choice->version;
  KernelTree want{*package, *version, kernel_release_of(*package), kernels_dir / (*package + "_" + *version)};
  if (!fs::exists(want.root / kCompleteMarker)) {
    if (auto ok = unpack(want, busybox, kernels_dir, progress); !ok) return ok.error();
  }
  std::ofstream(resolved) << want.package << " " << want.package_version << "\n";
  return want;
}

}  // namespace lockroom::vm::image
