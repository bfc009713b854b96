// Gitignore-style path patterns, used by the secret policy to decide which workspace files are
// withheld from a snapshot. Pure logic, no I/O; called on the snapshot worker thread.
//
// A pattern is matched against a workspace-relative path ("a/b/c.txt"):
//   - `*`, `?` and `[...]` match within one path component (fnmatch(3) rules, so `*.pem` also
//     matches `.x.pem`); a backslash escapes the next character;
//   - a component that is exactly `**` matches zero or more components;
//   - a trailing `/` makes the pattern match directories only (and so every file under them);
//   - a leading `/` anchors the pattern at the workspace root. Unlike .gitignore, a pattern
//     without a leading `/` matches at any depth even when it contains a `/`
//     (`.aws/credentials` also matches `home/.aws/credentials`): a secret stays a secret wherever
//     it sits;
//   - a pattern that is not directory-only also matches a directory of that name, and with it
//     everything under that directory (as in .gitignore).
// `!` negation is not part of a pattern: re-inclusion is a separate allow list (secret_policy.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/common/result.h"

namespace lockroom::workspace::snapshot {

class PathPattern {
 public:
  // Fails with kInvalidInput (naming the pattern) if it is empty, starts with `!`, has an empty,
  // `.` or `..` component, or is longer than 4096 bytes.
  static Result<PathPattern> parse(std::string_view text);

  // `components` is the path split on '/', e.g. {"a", "b", "c.txt"}.
  bool matches(const std::vector<std::string_view>& components) const;

  // Does the pattern match the path made of the first `end` components of `path` itself (not a
  // parent of it)? matches() is this for every end, up to the last but one when directory-only.
  bool matches_ending_at(const std::vector<std::string_view>& path, std::size_t end) const;

  const std::string& text() const { return text_; }
  bool directory_only() const { return directory_only_; }

 private:
  struct Component {
    enum class Kind { kLiteral, kSuffix, kPrefix, kGlob, kAnyDepth };
    Kind kind = Kind::kLiteral;
    std::string text;  // the whole glob, or the literal / suffix / prefix part
    bool matches(std::string_view name) const;
  };

  bool match_from(std::size_t pattern_at, const std::vector<std::string_view>& path, std::size_t path_at,
                  std::size_t end) const;

  std::string text_;
  std::vector<Component> components_;
  bool anchored_ = false;
  bool directory_only_ = false;
  bool has_any_depth_ = false;
};

// Splits "a/b/c" into {"a", "b", "c"} (views into `path`).
std::vector<std::string_view> split_path(std::string_view path);

}  // namespace lockroom::workspace::snapshot
