// The ignore rules of the host that the snapshot honoured but that do not travel in it, written
// for the guest's /workspace/.git/info/exclude: the global excludes (core.excludesFile), the
// repository's .git/info/exclude, and the .gitignore files of the folders above the workspace
// when it is a subfolder of its repository. Without them the guest's git would list what the
// agent makes there (build output, editor droppings) as new files, and every review would offer
// them. Patterns are rebased onto the workspace folder; one that cannot be rebased exactly (a
// "**" above the workspace) is left out, so the guest ignores at most what the host does.
// Blocking file reads; the snapshot's worker thread.
#pragma once

#include <git2.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace lockroom::workspace::snapshot {

// The guest's info/exclude can hold at most this much; sources past it are cut at a line.
inline constexpr std::size_t kMaxGuestExcludeBytes = 64 * 1024;

// The lines of a gitignore file kept at folder `from` (relative to the repository, "" or
// "a/b/") rewritten for a repository rooted at its subfolder `from` + `below` ("" or "c/"):
// comments and blank lines dropped; patterns without a '/' (but a trailing one) kept as they are;
// anchored patterns kept only if they lead into `below`, with that part removed. Pure.
std::string rebase_ignore_patterns(std::string_view text, std::string_view below);

// The text for the guest's info/exclude (empty when there is nothing to carry). `repo` is the
// user's repository, or null outside one (then only the global excludes apply); `prefix` is the
// workspace's path inside it ("" or "a/b/").
std::string guest_excludes(git_repository* repo, const std::string& prefix);

}  // namespace lockroom::workspace::snapshot
