// The image cache layout; see image_store.h.
#include "server/vm/image/image_store.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "server/vm/image/initramfs.h"

namespace lockroom::vm::image {

namespace fs = std::filesystem;

nlohmann::json manifest_to_json(const ImageManifest& m) {
  nlohmann::json tools = nlohmann::json::object();
  for (const auto& t : m.tools) tools[t.name] = {{"path", t.path}, {"sha256", t.sha256}};
  nlohmann::json missing = nlohmann::json::object();
  for (const auto& t : m.missing_tools) missing[t.name] = t.reason;
  nlohmann::json j{
      {"hash", m.hash},
      {"formatVersion", m.format_version},
      {"kernel", {{"package", m.kernel_package}, {"version", m.kernel_version}, {"release", m.kernel_release},
                  {"format", m.kernel_format}, {"bytes", m.kernel_bytes}}},
      {"initrd", {{"bytes", m.initrd_bytes}, {"modules", m.modules}}},
      {"agent", {{"path", m.agent_path}, {"sha256", m.agent_sha256}, {"libraries", m.agent_libs}}},
      {"busybox", {{"sha256", m.busybox_sha256}}},
      {"git", {{"path", m.git_path}, {"sha256", m.git_sha256}}},
      {"tools", tools},
      {"missingTools", missing},
      {"created", m.created},
  };
  if (m.packages)
    j["packages"] = {{"base", m.packages->base_hash}, {"requested", m.packages->requested}, {"resolved", m.packages->resolved},
                     {"layerBytes", m.packages->layer_bytes}, {"files", m.packages->files}};
  if (m.npm)
    j["npm"] = {{"base", m.npm->base_hash}, {"requested", m.npm->requested}, {"resolved", m.npm->resolved},
                {"lockSha256", m.npm->lock_sha256}, {"layerBytes", m.npm->layer_bytes}, {"files", m.npm->files}};
  return j;
}

Result<ImageManifest> manifest_from_json(const nlohmann::json& j) {
  try {
    ImageManifest m;
    m.hash = j.at("hash").get<std::string>();
    m.format_version = j.at("formatVersion").get<int>();
    const auto& k = j.at("kernel");
    m.kernel_package = k.at("package").get<std::string>();
    m.kernel_version = k.at("version").get<std::string>();
    m.kernel_release = k.at("release").get<std::string>();
    m.kernel_format = k.at("format").get<std::string>();
    m.kernel_bytes = k.at("bytes").get<std::uint64_t>();
    m.initrd_bytes = j.at("initrd").at("bytes").get<std::uint64_t>();
    m.modules = j.at("initrd").at("modules").get<std::vector<std::string>>();
    m.agent_path = j.at("agent").at("path").get<std::string>();
    m.agent_sha256 = j.at("agent").at("sha256").get<std::string>();
    m.agent_libs = j.at("agent").at("libraries").get<std::vector<std::string>>();
    m.busybox_sha256 = j.at("busybox").at("sha256").get<std::string>();
    if (j.contains("git")) {
      m.git_path = j.at("git").at("path").get<std::string>();
      m.git_sha256 = j.at("git").at("sha256").get<std::string>();
    }
    if (j.contains("tools"))  // images made before optional tools were carried have neither field
      for (const auto& [name, t] : j.at("tools").items())
        m.tools.push_back({name, t.at("path").get<std::string>(), t.at("sha256").get<std::string>()});
    if (j.contains("missingTools"))
      for (const auto& [name, reason] : j.at("missingTools").items()) m.missing_tools.push_back({name, reason.get<std::string>()});
    m.created = j.at("created").get<std::string>();
    if (j.contains("packages")) {
      const auto& p = j.at("packages");
      m.packages = ManifestPackages{p.at("base").get<std::string>(), p.at("requested").get<std::vector<std::string>>(),
                                    p.at("resolved").get<std::vector<std::string>>(), p.at("layerBytes").get<std::uint64_t>(),
                                    p.at("files").get<std::size_t>()};
    }
    if (j.contains("npm")) {
      const auto& p = j.at("npm");
      m.npm = ManifestNpm{p.at("base").get<std::string>(), p.at("requested").get<std::vector<std::string>>(),
                          p.at("resolved").get<std::vector<std::string>>(), p.at("lockSha256").get<std::string>(),
                          p.at("layerBytes").get<std::uint64_t>(), p.at("files").get<std::size_t>()};
    }
    return m;
  } catch (const nlohmann::json::exception& e) {
    return make_error(ErrorCode::kInvalidInput, std::string("the image manifest is not what lockroom writes: ") + e.what());
  }
}

fs::path images_dir(const fs::path& cache) { return cache / "images"; }

Result<GuestImage> load_image(const fs::path& dir) {
  auto text = read_host_file(dir / "manifest.json");
  if (!text) return text.error();
  auto json = nlohmann::json::parse(*text, nullptr, false);
  if (json.is_discarded())
    return make_error(ErrorCode::kInvalidInput, (dir / "manifest.json").string() + " is not JSON; delete the folder and run `lockroom image build`");
  auto manifest = manifest_from_json(json);
  if (!manifest) return manifest.error();
  GuestImage image{dir, std::move(*manifest)};
  if (image.manifest.format_version != kImageFormatVersion || !fs::exists(image.kernel()) || !fs::exists(image.initrd()))
    return make_error(ErrorCode::kNotFound, dir.string() + " is incomplete or from another lockroom version; run `lockroom image build`");
  return image;
}

std::vector<GuestImage> list_images(const fs::path& cache) {
  std::vector<GuestImage> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(images_dir(cache), ec)) {
    if (!entry.is_directory() || entry.path().filename().string().front() == '.') continue;
    if (auto image = load_image(entry.path())) out.push_back(std::move(*image));
  }
  std::sort(out.begin(), out.end(), [](const GuestImage& a, const GuestImage& b) { return a.manifest.created > b.manifest.created; });
  return out;
}

std::optional<std::string> current_image_hash(const fs::path& cache) {
  std::ifstream in(images_dir(cache) / "current");
  std::string hash;
  if (!(in >> hash) || hash.empty()) return std::nullopt;
  return hash;
}

Result<void> set_current_image(const fs::path& cache, const std::string& hash) {
  fs::path tmp = images_dir(cache) / (".current." + std::to_string(getpid()));
  {
    std::ofstream out(tmp);
    out << hash << "\n";
    if (!out) return make_error(ErrorCode::kUnavailable, "cannot write " + tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, images_dir(cache) / "current", ec);
  if (ec) return make_error(ErrorCode::kUnavailable, "cannot update " + (images_dir(cache) / "current").string() + ": " + ec.message());
  return {};
}

}  // namespace lockroom::vm::image
