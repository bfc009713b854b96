// Which paths a manifest looks at: what `git ls-files -z --cached --others --exclude-standard`
// lists (tracked files, and untracked ones no ignore rule excludes), without starting git when
// nothing that decides the answer changed since git last gave it. Under TCG that git process costs
// ~400 ms for a few thousand files.
//
// The tracked paths come from git's index (workspace_index_file.h). The untracked ones are git's
// own answer from the last time it ran, reused while every folder of the worktree (all of them,
// ignored ones too, except inside .git and nested repositories) still has the stat it had then —
// creating, removing or renaming an entry changes its folder's mtime — while the ignore rules'
// inputs (.git/info/exclude, .git/config, the global excludes and config, every .gitignore) are
// unchanged, and while no path left the index (it may be untracked now). Anything else, an index
// this code does not read, a folder changed within the racy margin of the listing, or more than
// kMaxFolders folders, asks git. Blocking; loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "guest/errors.h"
#include "guest/workspace_git.h"
#include "guest/workspace_hash.h"
#include "guest/workspace_index_file.h"

namespace lockroom::agent {

class WorkspaceListing {
 public:
  static constexpr std::size_t kMaxFolders = 20000;

  // Checks a run of git's ls-files: the error to answer with, or nullopt when it listed.
  using GitCheck = std::function<std::optional<RpcError>(const Result<GitRun>&)>;

  // Sorted, unique paths (folders that git lists, such as a nested repository, end in '/').
  // `index` is the workspace's index as just read, if it could be. `max_out` bounds git's output.
  std::variant<std::vector<std::string>, RpcError> list(const std::string& root, const std::optional<IndexFile>& index,
                                                         std::size_t max_out, const GitCheck& check);
  bool last_from_git() const { return last_from_git_; }

 private:
  struct Watched {
    std::string path;  // absolute
    StatKey key;       // all zero: it did not exist
  };
  bool still_valid(const IndexFile& index) const;
  void remember(const std::string& root, const IndexFile& index, std::vector<std::string> untracked, std::int64_t started);

  bool valid_ = false;
  bool last_from_git_ = true;
  std::vector<std::string> untracked_;    // git's --others answer
  std::vector<std::string> index_paths_;  // the index's paths when git gave it
  std::vector<Watched> watched_;
};

}  // namespace lockroom::agent
