// Kit lookup; see kit_catalog.h.
#include "server/kits/kit_catalog.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>

#include <unistd.h>

namespace lockroom::kits {

namespace fs = std::filesystem;

bool is_kit_path(const std::string& ref) {
  return ref.find('/') != std::string::npos || ref.ends_with(".yaml") || ref.ends_with(".yml");
}

namespace {

std::optional<fs::path> in_root(const fs::path& dir, const std::string& name) {
  std::error_code ec;
  for (fs::path candidate : {dir / name / "kit.yaml", dir / (name + ".yaml")})
    if (fs::is_regular_file(candidate, ec)) return candidate;
  return std::nullopt;
}

}  // namespace

fs::path builtin_kits_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path installed = exe.parent_path().parent_path() / "share" / "lockroom" / "kits";
    if (fs::is_directory(installed, ec)) return installed;
  }
#ifdef LOCKROOM_SOURCE_KITS_DIR
  return fs::path(LOCKROOM_SOURCE_KITS_DIR);
#else
  return {};
#endif
}

KitCatalog KitCatalog::standard_for(const fs::path& workspace, const std::map<std::string, std::string>* env) {
  if (!env) return standard(workspace);
  return standard(workspace, [env](const char* name) -> const char* {
    auto it = env->find(name);
    return it == env->end() ? nullptr : it->second.c_str();
  });
}

KitCatalog KitCatalog::standard(const fs::path& workspace, std::function<const char*(const char*)> getenv_fn) {
  if (!getenv_fn) getenv_fn = [](const char* n) -> const char* { return std::getenv(n); };
  std::vector<Root> roots;
  if (const char* p = getenv_fn("LOCKROOM_KIT_PATH"); p && *p) {
    std::stringstream ss(p);
    std::string dir;
    while (std::getline(ss, dir, ':'))
      if (!dir.empty()) roots.push_back({dir, "LOCKROOM_KIT_PATH"});
  }
  if (!workspace.empty()) roots.push_back({workspace / ".lockroom" / "kits", "workspace"});
  if (const char* x = getenv_fn("XDG_CONFIG_HOME"); x && *x) roots.push_back({fs::path(x) / "lockroom" / "kits", "user"});
  else if (const char* h = getenv_fn("HOME"); h && *h) roots.push_back({fs::path(h) / ".config" / "lockroom" / "kits", "user"});
  if (fs::path builtin = builtin_kits_dir(); !builtin.empty()) roots.push_back({builtin, "built-in"});
  return KitCatalog(std::move(roots));
}

Result<KitLocation> KitCatalog::find(const std::string& ref) const {
  if (ref.empty()) return make_error(ErrorCode::kInvalidInput, "an empty kit name");
  if (is_kit_path(ref)) {
    std::error_code ec;
    if (!fs::is_regular_file(ref, ec)) return make_error(ErrorCode::kNotFound, "kit file " + ref + " does not exist");
    return KitLocation{"", fs::absolute(ref), "file"};
  }
  if (!valid_kit_name(ref))
    return make_error(ErrorCode::kInvalidInput, "\"" + ref + "\" is not a kit name (lower-case letters, digits and '-') or a path to a kit file");
  std::string looked;
  for (const auto& root : roots_) {
    if (auto file = in_root(root.dir, ref)) return KitLocation{ref, *file, root.origin};
    looked += "\n  " + root.dir.string() + " (" + root.origin + ")";
  }
  std::string known;
  for (const auto& k : list()) known += (known.empty() ? "" : ", ") + k.name;
  return make_error(ErrorCode::kNotFound, "no kit named \"" + ref + "\"; looked in:" + looked +
                                              (known.empty() ? "\nno kits are installed" : "\nknown kits: " + known));
}

std::vector<KitLocation> KitCatalog::list() const {
  std::map<std::string, KitLocation> found;
  for (const auto& root : roots_) {
    std::error_code ec;
    for (fs::directory_iterator it(root.dir, ec), end; !ec && it != end; it.increment(ec)) {
      std::string name = it->path().filename().string();
      if (it->is_directory(ec)) {
        if (!valid_kit_name(name)) continue;
      } else {
        std::string ext = it->path().extension().string();
        if (ext != ".yaml") continue;
        name = it->path().stem().string();
        if (!valid_kit_name(name)) continue;
      }
      if (found.count(name)) continue;
      if (auto file = in_root(root.dir, name)) found.emplace(name, KitLocation{name, *file, root.origin});
    }
  }
  std::vector<KitLocation> out;
  for (auto& [name, loc] : found) out.push_back(std::move(loc));
  return out;
}

Result<KitSpec> load_kit_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return make_error(ErrorCode::kNotFound, "cannot read kit file " + file.string());
  std::string text;
  text.resize(kMaxKitFileSize + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxKitFileSize)
    return make_error(ErrorCode::kInvalidInput, file.string() + ": larger than " + std::to_string(kMaxKitFileSize >> 20) + " MiB");
  return parse_kit(text, file.string());
}

Result<KitSpec> KitCatalog::load(const std::string& ref) const {
  auto loc = find(ref);
  if (!loc) return loc.error();
  auto kit = load_kit_file(loc->file);
  if (!kit) return kit;
  if (!loc->name.empty() && kit->name != loc->name)
    return make_error(ErrorCode::kInvalidInput, loc->file.string() + ": the kit is named \"" + kit->name + "\" but was found as \"" +
                                                    loc->name + "\"; rename one of them");
  return kit;
}

}  // namespace lockroom::kits
