// What `lockroom run` does with the sandbox's changes to the workspace when the command ends:
// prints a diffstat, then applies them, saves them as a branch or a patch, or discards them —
// as the flags say, or as the user answers on a terminal (all / file by file / branch / patch /
// discard). Changes are never lost silently: without a flag and without a terminal they are
// saved as a patch file whose path is printed. CLI thread; blocking file I/O is fine here.
#pragma once

#include <filesystem>
#include <string>

#include "server/core/sandbox_workspace.h"

namespace lockroom::cli {

struct ReviewChoice {
  enum class Mode { kAsk, kApply, kBranch, kPatch, kDiscard };
  Mode mode = Mode::kAsk;
  std::string branch;      // kBranch: lockroom/<branch>
  std::string patch_file;  // kPatch
};

// Returns the process exit status to add to the command's: 0, or 1 when applying failed.
int review_changes(const core::ChangeSet& changes, const core::SandboxWorkspace& workspace, const ReviewChoice& choice,
                   bool interactive, const std::filesystem::path& fallback_patch_dir, const std::string& sandbox_id);

}  // namespace lockroom::cli
