// What `lockroom run` does with the sandbox's changes to the workspace when the command ends:
// prints a diffstat, then applies them, saves them as a branch or a patch, or discards them —
// as the flags say, or as the user answers on a terminal (all / file by file / branch / patch /
// discard). The agent's work is never lost: whatever was not applied or saved as asked (no flag
// and no terminal; conflicting or refused files; files declined one by one; a branch or patch
// that could not be made) is written as a patch that `git apply` takes, to the patches folder,
// and the output says where and how to apply it. A menu choice that fails returns to the menu.
//
// review_changes blocks: it reads the answers from a file descriptor, waiting for each even
// when the descriptor was left non-blocking (libuv does that to a terminal). CLI thread.
#pragma once

#include <filesystem>
#include <iostream>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "server/core/sandbox_workspace.h"

namespace lockroom::cli {

struct ReviewChoice {
  enum class Mode { kAsk, kApply, kBranch, kPatch, kDiscard };
  Mode mode = Mode::kAsk;
  std::string branch;      // kBranch: lockroom/<branch>
  std::string patch_file;  // kPatch
};

// Where the review acts and how it talks to the user.
struct ReviewContext {
  std::string host_path;                                       // the workspace folder on the host
  const workspace::snapshot::SnapshotResult* base = nullptr;   // what the sandbox started from
  std::filesystem::path patch_dir;                             // where patches go unless --patch names one
  std::string sandbox_id;                                      // names that patch and the menu's branch
  std::ostream* out = &std::cerr;                              // the diffstat, messages and the menu
  int answers_fd = -1;                                         // the menu's answers; -1: no menu (not a terminal)
  bool color = false;                                          // a coloured diffstat
};

// Returns the process exit status to add to the command's: 0, or 1 when something the user
// asked for was not done (what was not applied is then in a saved patch).
int review_changes(const core::ChangeSet& changes, const ReviewChoice& choice, const ReviewContext& context);

// The patch file review_changes saves to when no file was named: <patch_dir>/<sandbox id>.patch.
std::filesystem::path fallback_patch_file(const ReviewContext& context);

// Writes `patch` to `file` (making its folder) and tells `out` where it is and how to apply it
// in `context.host_path`. False, with the reason on `out`, when it cannot be written.
bool save_patch_text(const std::string& patch, const std::filesystem::path& file, const ReviewContext& context,
                     const std::string& what);

// One answer typed on `fd`, without the line end and surrounding blanks: waits for a whole line
// even when `fd` is non-blocking (poll on EAGAIN). Nothing at end of input or when the terminal
// is gone; a partial last line before end of input is an answer. Lines are cut at 256 bytes.
std::optional<std::string> read_answer(int fd);

}  // namespace lockroom::cli
