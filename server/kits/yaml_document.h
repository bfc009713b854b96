// YamlDocument: a YAML file read into JSON, remembering where each value was written.
//
// Kits are written in YAML but validated by the same JSON readers as the editor's requests (the
// network policy and secrets parsers name the bad field as a path like `network.rules[2].host`).
// This converter keeps, for every value, the line and column it came from under that same path
// syntax, so a reader's error can be reported as `kit.yaml:14:9: network.rules[2].host: ...`.
//
// Scalars follow YAML 1.2's core schema (null, true/false, integers, floats, else text), except
// that quoted scalars are always text and integers written with a leading zero stay text, so
// `mode: 0644` keeps the octal digits the writer meant. Mapping keys must be text and unique.
// Bounded: at most kMaxYamlNodes values and kMaxYamlDepth levels (aliases count each time they
// are used, so an alias bomb is refused rather than expanded). Pure; no I/O.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/common/result.h"

namespace lockroom::kits {

using json = nlohmann::json;

constexpr std::size_t kMaxYamlNodes = 100000;
constexpr std::size_t kMaxYamlDepth = 64;

struct SourcePosition {
  int line = 0;    // 1-based; 0 when unknown
  int column = 0;  // 1-based
};

struct YamlDocument {
  std::string file;  // for messages
  json value;
  std::map<std::string, SourcePosition> positions;  // by path: "" is the root, then `a.b[2].c`

  // The position of `path` or of its nearest recorded ancestor.
  SourcePosition position_of(std::string path) const;
  // "file:line:column: message", locating the path that `message` starts with
  // ("network.rules[2].host: ..."), or the root when it names none.
  std::string locate(const std::string& message) const;
};

// Fails (kInvalidInput) with "file:line:column: ..." for YAML syntax errors, duplicate or
// non-text keys, and documents over the bounds.
Result<YamlDocument> parse_yaml(std::string_view text, const std::string& file);

// `path` + `.key` or `[index]`, the way the JSON readers spell paths.
std::string child_path(const std::string& path, const std::string& key);
std::string child_path(const std::string& path, std::size_t index);

}  // namespace lockroom::kits
