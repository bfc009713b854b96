// Which of some untracked paths git's ignore rules exclude (.gitignore at every level,
// .git/info/exclude, core.excludesFile, an ignored folder above them), as `git ls-files --others
// --exclude-standard` would: one `git check-ignore --stdin -z -v -n` run for all of them. A
// manifest uses it when the watch saw only files come and go, instead of listing the whole tree
// again (under TCG ~100 ms of git start-up against ~400 ms for a listing of a few thousand files).
// Blocking; loop thread only.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "server/common/result.h"

namespace lockroom::agent {

// The subset of `paths` (workspace-relative, untracked) that git ignores in the worktree `root`.
Result<std::set<std::string>> ignored_paths(const std::string& root, const std::vector<std::string>& paths);

// Parses check-ignore's `-z -v -n` output: per path "<source>\0<line>\0<pattern>\0<path>\0",
// the first three empty when no pattern matches; a match of a negated pattern ("!x") is not
// ignored. Nullopt for output that does not have that shape.
std::optional<std::set<std::string>> parse_check_ignore(const std::string& out);

}  // namespace lockroom::agent
