// Path and symlink-target rules for guest-reported paths (see path_rules.h).
#include "server/workspace/review/path_rules.h"

#include <vector>

namespace lockroom::workspace::review {
namespace {

// Length of the UTF-8 sequence starting at s[i] (1..4), or 0 when it is not valid UTF-8
// (overlong forms, surrogates and code points above U+10FFFF are invalid).
std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  if (c < 0x80) return 1;
  std::size_t len = 0;
  unsigned int cp = 0;
  if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; }
  else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; }
  else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; }
  else return 0;
  if (i + len > s.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return 0;
  if (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return 0;
  return len;
}

// The three-byte UTF-8 forms of the code points HFS+ ignores in names (git's is_hfs_dotgit).
bool is_hfs_ignorable(std::string_view s, std::size_t i) {
  if (i + 3 > s.size()) return false;
  auto b0 = static_cast<unsigned char>(s[i]);
  auto b1 = static_cast<unsigned char>(s[i + 1]);
  auto b2 = static_cast<unsigned char>(s[i + 2]);
  if (b0 == 0xE2 && b1 == 0x80) return (b2 >= 0x8C && b2 <= 0x8F) || (b2 >= 0xAA && b2 <= 0xAE);  // U+200C-F, U+202A-E
  if (b0 == 0xE2 && b1 == 0x81) return b2 >= 0xAA && b2 <= 0xAF;  // U+206A-F
  return b0 == 0xEF && b1 == 0xBB && b2 == 0xBF;                   // U+FEFF
}

char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// True when `rest` is what NTFS drops after a name: spaces and dots, optionally then ":stream".
bool only_ntfs_trailer(std::string_view rest) {
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == ':') return true;
    if (rest[i] != ' ' && rest[i] != '.') return false;
  }
  return true;
}

std::vector<std::string_view> split_components(std::string_view path) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    std::size_t slash = path.find('/', start);
    parts.push_back(path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return parts;
}

}  // namespace

bool is_dotgit(std::string_view component) {
  std::string folded;
  folded.reserve(component.size());
  for (std::size_t i = 0; i < component.size();) {
    if (is_hfs_ignorable(component, i)) { i += 3; continue; }
    folded.push_back(ascii_lower(component[i]));
    ++i;
  }
  std::string_view f = folded;
  if (f.substr(0, 4) == ".git") return only_ntfs_trailer(f.substr(4));
  if (f.substr(0, 5) == "git~1") return only_ntfs_trailer(f.substr(5));
  return false;
}

std::optional<std::string> path_problem(std::string_view path) {
  if (path.empty()) return "the path is empty";
  if (path.size() > kMaxPathBytes) {
    return "the path is " + std::to_string(path.size()) + " bytes long (the limit is " + std::to_string(kMaxPathBytes) + ")";
  }
  if (path.front() == '/') return "the path is absolute; paths must be relative to the workspace";
  for (std::size_t i = 0; i < path.size();) {
    auto c = static_cast<unsigned char>(path[i]);
    if (c == 0) return "the path contains a NUL byte";
    if (c < 0x20 || c == 0x7F) return "the path contains a control character";
    std::size_t len = utf8_sequence_length(path, i);
    if (len == 0) return "the path is not valid UTF-8";
    i += len;
  }
  for (std::string_view part : split_components(path)) {
    if (part.empty()) return "the path has an empty component (a leading, trailing or doubled '/')";
    if (part == "." || part == "..") return "the path has a '" + std::string(part) + "' component";
    if (part.size() > kMaxComponentBytes) {
      return "a component of the path is " + std::to_string(part.size()) + " bytes long (the limit is " +
             std::to_string(kMaxComponentBytes) + ")";
    }
    if (is_dotgit(part)) return "the path has a component '" + printable(part) + "' that names git's own directory";
  }
  return std::nullopt;
}

std::optional<std::string> symlink_target_problem(std::string_view link_path, std::string_view target) {
  if (target.empty()) return "the symlink target is empty";
  if (target.size() > kMaxPathBytes) return "the symlink target is longer than " + std::to_string(kMaxPathBytes) + " bytes";
  if (target.find('\0') != std::string_view::npos) return "the symlink target contains a NUL byte";
  if (target.front() == '/') return "the symlink points to an absolute path";
  if (target.find('\\') != std::string_view::npos) return "the symlink target contains a backslash";
  std::vector<std::string_view> resolved = split_components(link_path);
  resolved.pop_back();  // the link's own name: targets resolve from its directory
  bool seen_normal = false;
  for (std::string_view part : split_components(target)) {
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (seen_normal) return "the symlink target has '..' after a directory name (lockroom cannot prove where it leads)";
      if (resolved.empty()) return "the symlink points outside the workspace";
      resolved.pop_back();
      continue;
    }
    if (is_dotgit(part)) return "the symlink points into git's own directory";
    seen_normal = true;
    resolved.push_back(part);
  }
  for (std::string_view part : resolved) {
    if (is_dotgit(part)) return "the symlink points into git's own directory";
  }
  return std::nullopt;
}

std::string printable(std::string_view text, std::size_t max_bytes) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    if (out.size() >= max_bytes) { out += "..."; break; }
    auto c = static_cast<unsigned char>(text[i]);
    std::size_t len = utf8_sequence_length(text, i);
    if (c < 0x20 || c == 0x7F || c == '\\' || len == 0) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
      ++i;
      continue;
    }
    out.append(text.substr(i, len));
    i += len;
  }
  return out;
}

}  // namespace lockroom::workspace::review
