// The stat cache of a snapshot store: for every file of the last snapshot, its stat data and blob
// id, so the next snapshot reuses the blob of a file whose path, mode, size, mtime, ctime and inode
// are unchanged instead of reading it again. It is a git index file inside the store
// (<store>/lockroom-stat-cache), and the new index built during a snapshot is also what the
// snapshot's trees are written from. It is updated in place: an entry that did not change is
// not touched, so libgit2's cached trees of the folders where nothing changed are reused and only
// the changed folders' trees are written again. Blocking I/O; used by take_snapshot() on a
// worker thread.
//
// Racy files: an entry is trusted next time only if the file's mtime was at least 2 seconds older
// than the start of the scan that recorded it; a file written during or just before a snapshot
// is read again the next time (its cached mtime is zeroed, as git "smudges" racily clean entries).
#pragma once

#include <sys/stat.h>

#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "server/common/result.h"
#include "server/workspace/git_util.h"
#include "server/workspace/snapshot/workspace_scan.h"

namespace lockroom::workspace::snapshot {

class StatCache {
 public:
  // Loads the previous snapshot's entries from the store (none if there is no cache yet or it
  // cannot be read). `scan_started` is the wall-clock time the scan began.
  static Result<StatCache> open(const std::string& store_dir, const timespec& scan_started);

  // The blob id recorded for `entry` if its stat data are unchanged and the store still has it.
  std::optional<git_oid> lookup(const ScannedEntry& entry, git_odb* odb) const;

  // Records a selected entry for this snapshot's tree and the next snapshot's lookups.
  Result<void> add(const std::string& path, EntryKind kind, const git_oid& id, const struct stat& stat);

  // Drops the entries of files not added this time, writes the trees of everything added into
  // the store and returns the root tree's id.
  Result<git_oid> write_tree(git_repository* store);

  // Replaces the cache file with this snapshot's entries. Best effort: false if it could not be
  // written (e.g. another snapshot of the same workspace holds its lock).
  bool save();

 private:
  struct Added {
    std::string path;
    EntryKind kind;
    git_oid id;
    struct stat stat;
  };
  Result<void> put_entry(const Added& a);

  IndexPtr index_;              // the previous snapshot's entries, becoming this one's
  std::vector<Added> added_;    // this snapshot's entries, in the order added
  bool in_order_ = true;        // added_ is sorted by path (the scanner's order)
  timespec trusted_before_{};
};

}  // namespace lockroom::workspace::snapshot
