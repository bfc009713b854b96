// git in the guest image: agents run `git status` / `git diff` in /workspace, and the agent's
// workspace.* methods drive git itself (init, index-pack, read-tree, ls-files).
//
// find_guest_git() takes the host's git (from scripts/setup) with the shared libraries its
// loader resolves (ldd, as for the agent) and the two small template files `git init` copies.
// Only the one `git` binary goes in: every command lockroom and the issue need (init,
// index-pack, read-tree, update-ref, ls-files, status, diff, add, commit, log) is built into it,
// and /usr/lib/git-core/git links back to it so git finds itself when it runs a subcommand. The
// Perl/shell helpers and remote helpers of /usr/lib/git-core are left out (no network anyway).
// guest_gitconfig() is the system /etc/gitconfig: a sandbox identity, every directory safe,
// branch `main`, no pager, no advice, no automatic gc. Blocking (runs ldd): CLI or worker thread.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "server/common/result.h"
#include "server/vm/image/cpio_writer.h"

namespace lockroom::vm::image {

struct GuestGit {
  std::filesystem::path program;       // the host's git binary (symlinks resolved)
  std::vector<std::string> libs;       // absolute host paths, the loader included
  std::vector<std::pair<std::string, std::filesystem::path>> templates;  // guest path → host file
};

inline constexpr const char* kGuestGitPath = "usr/bin/git";
inline constexpr const char* kGuestGitTemplates = "usr/share/git-core/templates";

Result<GuestGit> find_guest_git();

// The guest's /etc/gitconfig. Pure.
std::string guest_gitconfig();

// Adds git, its templates and /etc/gitconfig to `archive` (libraries are added with the agent's).
Result<void> add_guest_git(CpioArchive& archive, const GuestGit& git);

}  // namespace lockroom::vm::image
