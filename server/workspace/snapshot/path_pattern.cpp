// Gitignore-style path patterns (see path_pattern.h).
#include "server/workspace/snapshot/path_pattern.h"

#include <fnmatch.h>
#include <limits.h>

#include <cstring>

namespace lockroom::workspace::snapshot {
namespace {

constexpr std::size_t kMaxPatternBytes = 4096;

bool has_glob_characters(std::string_view text) {
  return text.find_first_of("*?[\\") != std::string_view::npos;
}

}  // namespace

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    if (slash > start) out.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return out;
}

Result<PathPattern> PathPattern::parse(std::string_view text) {
  auto invalid = [&](const std::string& why) {
    return make_error(ErrorCode::kInvalidInput, "invalid withhold/allow pattern \"" + std::string(text) + "\": " + why);
  };
  if (text.empty()) return invalid("it is empty");
  if (text.size() > kMaxPatternBytes) return invalid("it is longer than 4096 bytes");
  if (text.find('\0') != std::string_view::npos) return invalid("it contains a NUL byte");
  if (text.front() == '!') return invalid("negation is not supported; put the pattern in the allow list instead");

  PathPattern pattern;
  pattern.text_ = std::string(text);
  std::string_view body = text;
  if (body.front() == '/') {
    pattern.anchored_ = true;
    body.remove_prefix(1);
  }
  if (!body.empty() && body.back() == '/') {
    pattern.directory_only_ = true;
    body.remove_suffix(1);
  }
  if (body.empty()) return invalid("it names no file or directory");

  std::size_t start = 0;
  while (start <= body.size()) {
    std::size_t slash = body.find('/', start);
    if (slash == std::string_view::npos) slash = body.size();
    std::string_view part = body.substr(start, slash - start);
    if (part.empty()) return invalid("it has an empty path component (\"//\")");
    if (part == "." || part == "..") return invalid("it has a \".\" or \"..\" component");

    Component c;
    if (part == "**") {
      c.kind = Component::Kind::kAnyDepth;
      pattern.has_any_depth_ = true;
    } else if (!has_glob_characters(part)) {
      c.kind = Component::Kind::kLiteral;
      c.text = std::string(part);
    } else if (part.front() == '*' && !has_glob_characters(part.substr(1))) {
      c.kind = Component::Kind::kSuffix;  // "*.pem"
      c.text = std::string(part.substr(1));
    } else if (part.back() == '*' && !has_glob_characters(part.substr(0, part.size() - 1))) {
      c.kind = Component::Kind::kPrefix;  // "id_rsa*"
      c.text = std::string(part.substr(0, part.size() - 1));
    } else {
      c.kind = Component::Kind::kGlob;
      c.text = std::string(part);
    }
    pattern.components_.push_back(std::move(c));
    start = slash + 1;
  }
  return pattern;
}

bool PathPattern::Component::matches(std::string_view name) const {
  switch (kind) {
    case Kind::kLiteral: return name == text;
    case Kind::kSuffix: return name.size() >= text.size() && name.substr(name.size() - text.size()) == text;
    case Kind::kPrefix: return name.substr(0, text.size()) == text;
    case Kind::kGlob: {
      if (name.size() < NAME_MAX + 1) {  // a file name always fits: no allocation per match
        char buffer[NAME_MAX + 1];
        std::memcpy(buffer, name.data(), name.size());
        buffer[name.size()] = '\0';
        return fnmatch(text.c_str(), buffer, 0) == 0;
      }
      return fnmatch(text.c_str(), std::string(name).c_str(), 0) == 0;
    }
    case Kind::kAnyDepth: return true;
  }
  return false;
}

bool PathPattern::match_from(std::size_t pattern_at, const std::vector<std::string_view>& path, std::size_t path_at,
                             std::size_t end) const {
  if (pattern_at == components_.size()) return path_at == end;
  const Component& c = components_[pattern_at];
  if (c.kind == Component::Kind::kAnyDepth) {
    for (std::size_t k = path_at; k <= end; ++k) {
      if (match_from(pattern_at + 1, path, k, end)) return true;
    }
    return false;
  }
  return path_at < end && c.matches(path[path_at]) && match_from(pattern_at + 1, path, path_at + 1, end);
}

bool PathPattern::matches_ending_at(const std::vector<std::string_view>& path, std::size_t end) const {
  if (anchored_) return match_from(0, path, 0, end);
  if (!has_any_depth_) {
    // Fixed length: the only possible start is `end - length`.
    if (components_.size() > end) return false;
    return match_from(0, path, end - components_.size(), end);
  }
  for (std::size_t start = 0; start <= end; ++start) {
    if (match_from(0, path, start, end)) return true;
  }
  return false;
}

bool PathPattern::matches(const std::vector<std::string_view>& components) const {
  // A parent directory that matches takes everything under it along; the file itself matches
  // only a pattern that is not directory-only.
  const std::size_t last = directory_only_ ? components.size() - (components.empty() ? 0 : 1) : components.size();
  for (std::size_t end = 1; end <= last; ++end) {
    if (matches_ending_at(components, end)) return true;
  }
  return false;
}

}  // namespace lockroom::workspace::snapshot
