// Reading an npm install; see npm_tree.h.
#include "server/vm/image/npm_tree.h"

#include <algorithm>
#include <filesystem>

namespace lockroom::vm::image {

namespace {

Error bin_error(const std::string& package, const std::string& what) {
  return Error{ErrorCode::kInvalidInput, "the npm package " + package + " has a bin entry " + what + "; lockroom does not install it"};
}

Result<NpmBin> checked_bin(const std::string& package, const std::string& name, const nlohmann::json& path) {
  if (!path.is_string()) return bin_error(package, "\"" + name + "\" that is not a path");
  std::string text = path.get<std::string>();
  if (name.empty() || name == "." || name == ".." || name.find_first_of("/\\'\n\r", 0) != std::string::npos || name.find('\0') != std::string::npos)
    return bin_error(package, "named \"" + name + "\" (not a plain file name)");
  if (text.empty() || text.find_first_of("'\n\r") != std::string::npos || text.find('\0') != std::string::npos)
    return bin_error(package, "\"" + name + "\" with the path \"" + text + "\"");
  std::filesystem::path p = std::filesystem::path(text).lexically_normal();
  if (p.is_absolute() || p.empty() || *p.begin() == "..") return bin_error(package, "\"" + name + "\" leaving the package (\"" + text + "\")");
  return NpmBin{name, package, p.generic_string()};
}

}  // namespace

std::vector<std::string> npm_installed_names(const nlohmann::json& prefix_package_json) {
  std::vector<std::string> names;
  if (!prefix_package_json.is_object() || !prefix_package_json.contains("dependencies")) return names;
  const auto& deps = prefix_package_json["dependencies"];
  if (!deps.is_object()) return names;
  for (const auto& [name, spec] : deps.items()) names.push_back(name);
  return names;
}

Result<std::vector<NpmBin>> npm_package_bins(const std::string& package, const nlohmann::json& package_json) {
  std::vector<NpmBin> bins;
  if (!package_json.is_object() || !package_json.contains("bin")) return bins;
  const auto& bin = package_json["bin"];
  if (bin.is_string()) {
    // A single program is named after the package, without its scope.
    std::string name = package.substr(package.find('/') == std::string::npos ? 0 : package.find('/') + 1);
    auto one = checked_bin(package, name, bin);
    if (!one) return one.error();
    bins.push_back(*one);
  } else if (bin.is_object()) {
    for (const auto& [name, path] : bin.items()) {
      auto one = checked_bin(package, name, path);
      if (!one) return one.error();
      bins.push_back(*one);
    }
  } else {
    return bin_error(package, "list that is neither a path nor a mapping");
  }
  return bins;
}

std::vector<std::string> npm_resolved_packages(const nlohmann::json& lock, const std::function<bool(const std::string& path)>& installed) {
  std::vector<std::string> out;
  if (!lock.is_object() || !lock.contains("packages") || !lock["packages"].is_object()) return out;
  constexpr std::string_view kPrefix = "node_modules/";
  for (const auto& [where, entry] : lock["packages"].items()) {
    // "node_modules/a/node_modules/@s/b" is @s/b (nested); the root "" is the prefix itself.
    std::size_t at = where.rfind(kPrefix);
    if (at == std::string::npos || !entry.is_object() || (installed && !installed(where))) continue;
    std::string name = where.substr(at + kPrefix.size());
    std::string version = entry.contains("version") && entry["version"].is_string() ? entry["version"].get<std::string>() : "?";
    out.push_back(name + "@" + version);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool npm_bin_runs_under_node(std::string_view head) {
  if (head.substr(0, 2) != "#!") return false;
  std::string_view line = head.substr(0, head.find('\n'));
  // The interpreter is node itself or env running node: "node" as a word of the line.
  for (std::size_t at = line.find("node"); at != std::string_view::npos; at = line.find("node", at + 1)) {
    bool starts = at > 0 && (line[at - 1] == '/' || line[at - 1] == ' ');
    bool ends = at + 4 == line.size() || line[at + 4] == ' ' || line[at + 4] == '\r';
    if (starts && ends) return true;
  }
  return false;
}

std::string npm_node_wrapper(const NpmBin& bin) {
  return "#!/bin/sh\n"
         "# " + bin.name + " from the npm package " + bin.package + " (a kit's npm: layer, made by lockroom)\n"
         "exec node '/" + std::string(kNpmModulesDir) + "/" + bin.package + "/" + bin.path + "' \"$@\"\n";
}

}  // namespace lockroom::vm::image
