// Package sets and apt's answers; see package_closure.h.
#include "server/vm/image/package_closure.h"

#include <algorithm>
#include <sstream>

#include "server/vm/image/sha256.h"

namespace lockroom::vm::image {

namespace {

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  return std::string(s);
}

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> out;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// Debian Policy 5.6.1, with an optional ":arch" of lower-case letters and digits.
bool valid_name(const std::string& name) {
  std::size_t colon = name.find(':');
  std::string base = name.substr(0, colon);
  if (base.size() < 2 || base.size() > 128) return false;
  if (!((base[0] >= 'a' && base[0] <= 'z') || (base[0] >= '0' && base[0] <= '9'))) return false;
  for (char c : base)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.')) return false;
  if (colon == std::string::npos) return true;
  std::string arch = name.substr(colon + 1);
  if (arch.empty() || arch.size() > 32) return false;
  return std::all_of(arch.begin(), arch.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
}

// The text between the first pair of `open`/`close` after `from`, or "".
std::string between(const std::string& s, char open, char close, std::size_t from = 0) {
  std::size_t a = s.find(open, from);
  if (a == std::string::npos) return "";
  std::size_t b = s.find(close, a + 1);
  if (b == std::string::npos) return "";
  return s.substr(a + 1, b - a - 1);
}

std::string mib_text(std::uint64_t bytes) {
  std::ostringstream out;
  out.precision(1);
  out << std::fixed << static_cast<double>(bytes) / (1024.0 * 1024.0) << " MiB";
  return out.str();
}

}  // namespace

Result<std::vector<std::string>> normalize_package_set(std::vector<std::string> packages) {
  for (const auto& p : packages)
    if (!valid_name(p))
      return make_error(ErrorCode::kInvalidInput, "\"" + p + "\" is not a Debian package name (lower-case letters, digits, '+', '-', '.'; optionally \":arch\")");
  std::sort(packages.begin(), packages.end());
  packages.erase(std::unique(packages.begin(), packages.end()), packages.end());
  if (packages.size() > kMaxPackageSet)
    return make_error(ErrorCode::kLimitExceeded, std::to_string(packages.size()) + " Debian packages asked for; at most " +
                                                     std::to_string(kMaxPackageSet) + " may be");
  return packages;
}

Result<std::vector<PackageRef>> parse_simulated_install(std::string_view output, int exit_code) {
  std::vector<PackageRef> closure;
  std::vector<std::string> errors, unmet;
  bool in_unmet = false;
  for (const auto& raw : lines_of(output)) {
    std::string line = trim(raw);
    if (starts_with(line, "E: ")) {
      errors.push_back(line.substr(3));
      continue;
    }
    if (starts_with(line, "The following packages have unmet dependencies")) {
      in_unmet = true;
      continue;
    }
    if (in_unmet && !line.empty() && raw.size() > 0 && std::isspace(static_cast<unsigned char>(raw[0]))) {
      unmet.push_back(line);
      continue;
    }
    in_unmet = false;
    if (!starts_with(line, "Inst ")) continue;
    // "Inst NAME [OLD] (VERSION RELEASE… [ARCH]) []"
    std::istringstream words(line.substr(5));
    PackageRef ref;
    words >> ref.name;
    std::string inside = between(line, '(', ')', 5 + ref.name.size());
    std::istringstream parts(inside);
    parts >> ref.version;
    std::size_t arch_at = inside.rfind('[');
    if (arch_at != std::string::npos) ref.arch = between(inside, '[', ']', arch_at);
    if (!valid_name(ref.name) || ref.version.empty() || ref.arch.empty())
      return make_error(ErrorCode::kInternal, "apt-get printed an install line lockroom cannot read: \"" + line + "\"");
    if (closure.size() == kMaxPackageClosure)
      return make_error(ErrorCode::kLimitExceeded, "the packages pull in more than " + std::to_string(kMaxPackageClosure) + " packages");
    closure.push_back(std::move(ref));
  }
  for (const auto& e : errors) {
    const std::string locate = "Unable to locate package ";
    if (starts_with(e, locate)) {
      std::string name = trim(e.substr(locate.size()));
      return make_error(ErrorCode::kNotFound, "the Debian package \"" + name +
                                                  "\" does not exist in this host's apt sources; check the name (`apt-cache search " +
                                                  name + "`) or refresh apt's lists (`sudo apt-get update`)");
    }
    if (starts_with(e, "Package '")) {
      std::string name = between(e, '\'', '\'');
      return make_error(ErrorCode::kNotFound, "the Debian package \"" + name +
                                                  "\" has no version apt can install (a virtual or removed package?): " + e);
    }
  }
  if (!errors.empty() || exit_code != 0) {
    std::string text;
    for (const auto& u : unmet) text += "\n    " + u;
    for (const auto& e : errors) text += "\n    " + e;
    if (text.empty()) text = "\n    (apt-get exited with status " + std::to_string(exit_code) + " and said nothing)";
    return make_error(ErrorCode::kUnavailable, "apt cannot resolve the packages:" + text);
  }
  return closure;
}

std::vector<PackageSize> parse_package_records(std::string_view output) {
  std::vector<PackageSize> out;
  PackageSize current;
  auto flush = [&] {
    if (!current.name.empty()) out.push_back(current);
    current = PackageSize{};
  };
  for (const auto& line : lines_of(output)) {
    if (trim(line).empty()) {
      flush();
      continue;
    }
    auto value = [&](std::string_view field) { return trim(std::string_view(line).substr(field.size())); };
    try {
      if (starts_with(line, "Package:")) current.name = value("Package:");
      else if (starts_with(line, "Version:")) current.version = value("Version:");
      else if (starts_with(line, "Installed-Size:")) current.installed_bytes = std::stoull(value("Installed-Size:")) * 1024;
      else if (starts_with(line, "Size:")) current.download_bytes = std::stoull(value("Size:"));
    } catch (const std::exception&) {
      // A size apt did not print as a number counts as unknown (0).
    }
  }
  flush();
  return out;
}

Result<void> check_package_sizes(const std::vector<PackageSize>& sizes, std::uint64_t limit, const std::string& what) {
  std::uint64_t total = 0;
  for (const auto& s : sizes) total += s.installed_bytes;
  if (total <= limit) return {};
  std::vector<PackageSize> biggest = sizes;
  std::sort(biggest.begin(), biggest.end(), [](const PackageSize& a, const PackageSize& b) {
    return a.installed_bytes != b.installed_bytes ? a.installed_bytes > b.installed_bytes : a.name < b.name;
  });
  std::string list;
  for (std::size_t i = 0; i < biggest.size() && i < 5; ++i) list += (i ? ", " : "") + biggest[i].name + " " + mib_text(biggest[i].installed_bytes);
  return make_error(ErrorCode::kLimitExceeded, "the Debian packages take " + mib_text(total) + " " + what + ", more than the " +
                                                   mib_text(limit) + " a guest image may add; the biggest: " + list +
                                                   ". Ask for fewer packages, or raise the limit (LOCKROOM_MAX_PACKAGE_MIB) and the kit's memoryMiB");
}

std::string deb_file_name(const PackageRef& ref) {
  std::string version;
  for (char c : ref.version) version += c == ':' ? std::string("%3a") : std::string(1, c);
  return ref.name.substr(0, ref.name.find(':')) + "_" + version + "_" + ref.arch + ".deb";
}

std::string package_image_key(const std::string& base_hash, const std::vector<std::string>& packages,
                              const std::vector<PackageRef>& closure) {
  Sha256 h;
  h.add("layer-format", "2");  // 2: Python modules precompiled
  h.add("base", base_hash);
  for (const auto& p : packages) h.add("package", p);
  for (const auto& r : closure) h.add("resolved", r.name + "=" + r.version + ":" + r.arch);
  return h.hex_digest().substr(0, 16);
}

std::string package_set_key(const std::vector<std::string>& packages) {
  Sha256 h;
  for (const auto& p : packages) h.add("package", p);
  return h.hex_digest().substr(0, 16);
}

std::string closure_to_text(const std::vector<PackageRef>& closure) {
  std::string out;
  for (const auto& r : closure) out += r.name + " " + r.version + " " + r.arch + "\n";
  return out;
}

Result<std::vector<PackageRef>> closure_from_text(std::string_view text) {
  std::vector<PackageRef> out;
  for (const auto& line : lines_of(text)) {
    if (trim(line).empty()) continue;
    std::istringstream words(line);
    PackageRef r;
    std::string extra;
    if (!(words >> r.name >> r.version >> r.arch) || (words >> extra) || !valid_name(r.name))
      return make_error(ErrorCode::kInvalidInput, "not a resolved package line: \"" + line + "\"");
    out.push_back(std::move(r));
  }
  return out;
}

std::string package_list_text(const std::vector<std::string>& packages, std::size_t most) {
  std::string out;
  for (std::size_t i = 0; i < packages.size() && i < most; ++i) out += (i ? ", " : "") + packages[i];
  if (packages.size() > most) out += ", …";
  return out;
}

}  // namespace lockroom::vm::image
