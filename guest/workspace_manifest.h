// Building a workspace manifest: the files `git add -A` would take, with their modes and blob ids.
//
// The candidates are what `git ls-files -z --cached --others --exclude-standard` lists (tracked
// files plus untracked ones that .gitignore, .git/info/exclude and core.excludesFile do not
// exclude), from git's index and git's last answer while nothing that decides it changed
// (workspace_listing.h), else from git. The agent then looks at each itself: a regular file is
// hashed (or its id taken from the stat cache, or from git's index when the file's stat is what
// the index recorded), a symlink's blob is its target, anything else (a deleted tracked file, a
// directory such as a nested repository, a FIFO) is skipped, and so is any path below a parent
// that is no longer a real directory, or one the host would refuse (inside a ".GIT" folder).
// Bounds the host declared are checked and a refusal names the biggest offenders. Blocking; loop
// thread only.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "guest/errors.h"
#include "guest/workspace_hash.h"
#include "guest/workspace_listing.h"
#include "protocol/channel/messages.h"

namespace lockroom::agent {

// The bytes of the files a manifest read, kept for a partial manifest's inline content: each one
// of at most `max_file_bytes` while the total stays within `max_total_bytes`, taken from the very
// read that produced its id (an id from the stat cache or git's index has no bytes here).
class ContentCapture {
 public:
  ContentCapture() = default;
  explicit ContentCapture(const protocol::channel::InlineBounds& bounds);
  bool on() const { return on_; }
  // The most bytes one more file may have and still be kept.
  std::uint64_t room() const;
  void keep(const std::string& path, std::string bytes);
  const std::string* find(const std::string& path) const;
  std::string* find(const std::string& path);  // (its bytes may be moved out once used)

 private:
  bool on_ = false;
  std::uint64_t max_file_bytes_ = 0;
  std::uint64_t max_total_bytes_ = 0;
  std::uint64_t total_ = 0;
  std::unordered_map<std::string, std::string> contents_;
};

// Whether every folder above a path (relative to the open folder `root`) passes `test`; each
// folder is tested once per check.
class FolderCheck {
 public:
  using Test = bool (*)(int root, const std::string& folder);
  FolderCheck(int root, Test test) : root_(root), test_(test) {}
  bool all_pass(const std::string& path);

 private:
  int root_;
  Test test_;
  std::unordered_map<std::string, bool> known_;
};

// A real directory, not a symlink to one (nor anything else).
bool is_real_folder(int root, const std::string& folder);

struct Manifest {
  std::vector<protocol::channel::ManifestEntry> entries;  // sorted by path bytes
  ContentCapture captured;                                 // off unless the caller asked for it
  std::int64_t bytes = 0;
  std::int64_t hashed = 0;
  std::int64_t cached = 0;
  std::int64_t skipped = 0;
  bool listed_by_git = true;  // false: git's index and its last answer sufficed
  bool changes_only = false;  // `entries` are the changes to the previous manifest (update_manifest)
};

// `capture`: keep the bytes of the files read, within these bounds (Manifest::captured).
// `earlier`: files hashed before, trusted while their stat is the same (taken from it when used).
std::variant<Manifest, RpcError> build_manifest(const std::string& root, const protocol::channel::WorkspaceBounds& bounds, StatCache& cache,
                                                WorkspaceListing& listing, const std::optional<protocol::channel::InlineBounds>& capture = std::nullopt,
                                                EarlierHashes* earlier = nullptr);

// Where a file's id may come from without reading it.
struct KnownIds {
  StatCache& cache;
  const IndexFile* index = nullptr;     // git's index: its stat data vouches for its ids
  EarlierHashes* earlier = nullptr;     // hashed before the manifest, with their bytes
};

// One candidate path that lstat() found to be a regular file or a symlink (`st`), as a manifest
// entry: its id from an earlier hash (with its bytes), the stat cache, git's index when the stat
// is what it recorded, or hashed (`started`: CLOCK_REALTIME before the manifest began). Counts it
// in m.hashed / m.cached, or m.skipped when it went away meanwhile (then nullopt). The bytes read
// for it go to m.captured when that is on and they fit.
std::optional<protocol::channel::ManifestEntry> describe_file(int dir, const std::string& path, struct stat& st,
                                                              const protocol::channel::WorkspaceBounds& bounds, KnownIds& known, BlobHasher& hasher,
                                                              std::int64_t started, Manifest& m);

// Splits git's -z output into sorted, unique paths.
std::vector<std::string> split_z(const std::string& text);

// "src (120 files), docs (14 files), ..." for the top-level folders holding the most paths.
std::string biggest_folders(const std::vector<std::string>& paths, std::size_t top = 3);

}  // namespace lockroom::agent
