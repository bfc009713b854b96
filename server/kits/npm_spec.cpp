// npm package specs; see npm_spec.h.
#include "server/kits/npm_spec.h"

#include <algorithm>
#include <map>

namespace lockroom::kits {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxVersionLength = 128;

const char* const kForms =
    "write NAME@VERSION (\"@zed-industries/claude-agent-acp@0.23.1\"; an exact version is best) or file:PATH to an `npm pack` tarball";

bool lower_or_digit(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// One part of a name (the scope or the name itself): npm's URL-safe lower-case characters.
bool valid_name_part(const std::string& part) {
  if (part.empty() || !lower_or_digit(part[0])) return false;
  return std::all_of(part.begin(), part.end(), [](char c) { return lower_or_digit(c) || c == '-' || c == '.' || c == '_' || c == '~'; });
}

// A version, range or tag: "1.2.3", "^1.2", ">=1 <2", "1.x || 2.x", "latest", "1.0.0-beta.1+b2".
bool valid_version(const std::string& v) {
  if (v.empty() || v.size() > kMaxVersionLength || v[0] == '-' || v[0] == ' ') return false;
  return std::all_of(v.begin(), v.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || std::string_view(".+-^~<>=*| ").find(c) != std::string_view::npos;
  });
}

bool is_tarball_name(const std::string& path) {
  auto ends = [&](std::string_view suffix) { return path.size() > suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0; };
  return ends(".tgz") || ends(".tar.gz");
}

// Where the name ends in a registry spec: the '@' after the name (a scope's leading '@' is not it).
std::size_t version_at(const std::string& spec) { return spec.find('@', spec.empty() || spec[0] != '@' ? 0 : 1); }

}  // namespace

bool valid_npm_name(const std::string& name) {
  if (name.empty() || name.size() > kMaxNpmNameLength) return false;
  if (name[0] != '@') return valid_name_part(name);
  std::size_t slash = name.find('/');
  if (slash == std::string::npos) return false;
  return valid_name_part(name.substr(1, slash - 1)) && valid_name_part(name.substr(slash + 1));
}

Result<std::string> normalize_npm_spec(const std::string& spec, const fs::path& kit_dir) {
  auto bad = [&](const std::string& why) { return make_error(ErrorCode::kInvalidInput, "\"" + spec + "\" " + why + "; " + kForms); };
  if (spec.find('\0') != std::string::npos) return make_error(ErrorCode::kInvalidInput, "an npm spec must not contain a NUL character");
  if (spec.rfind("file:", 0) == 0) {
    std::string path = spec.substr(5);
    if (path.empty()) return bad("names no file");
    if (!is_tarball_name(path)) return bad("is not a package tarball (.tgz or .tar.gz, as `npm pack` writes)");
    fs::path p(path);
    if (p.is_relative()) {
      if (kit_dir.empty()) return bad("must name its tarball by an absolute path here");
      p = kit_dir / p;
    }
    return "file:" + p.lexically_normal().string();
  }
  std::size_t at = version_at(spec);
  std::string name = spec.substr(0, at);
  if (!valid_npm_name(name)) return bad("is not an npm package name (lower-case, optionally @scope/name)");
  if (at != std::string::npos && !valid_version(spec.substr(at + 1)))
    return bad("has a version that is not a version, range or tag");
  return spec;
}

std::optional<std::string> npm_spec_name(const std::string& spec) {
  if (spec.rfind("file:", 0) == 0) return std::nullopt;
  return spec.substr(0, version_at(spec));
}

std::optional<fs::path> npm_spec_file(const std::string& spec) {
  if (spec.rfind("file:", 0) != 0) return std::nullopt;
  return fs::path(spec.substr(5));
}

Result<std::vector<std::string>> normalize_npm_set(std::vector<std::string> specs) {
  if (specs.size() > kMaxNpmSpecs)
    return make_error(ErrorCode::kInvalidInput, "the kits ask for " + std::to_string(specs.size()) + " npm packages; at most " + std::to_string(kMaxNpmSpecs));
  for (auto& spec : specs) {
    auto normal = normalize_npm_spec(spec, {});
    if (!normal) return normal.error();
    spec = std::move(*normal);
  }
  std::sort(specs.begin(), specs.end());
  specs.erase(std::unique(specs.begin(), specs.end()), specs.end());
  std::map<std::string, std::string> by_name;
  for (const auto& spec : specs) {
    auto name = npm_spec_name(spec);
    if (!name) continue;
    auto [it, fresh] = by_name.emplace(*name, spec);
    if (!fresh)
      return make_error(ErrorCode::kInvalidInput, "the npm package \"" + *name + "\" is asked for twice, as \"" + it->second + "\" and \"" + spec +
                                                      "\"; keep one");
  }
  return specs;
}

}  // namespace lockroom::kits
