// git's index file (.git/index) read whole and written back by the agent, for a sync it does
// itself (workspace_fast_sync.h). Strict: only an index git writes plainly is taken (signature
// "DIRC", version 2 or 3, every entry at stage 0 with no extended or assume-valid flag, no
// required extension such as a split index's "link"); anything else gives nullopt and the caller
// leaves the work to git. Optional extensions (the cache tree, the untracked cache) are dropped on
// write, which git accepts: they are rebuilt when needed. Pure except read_index_file().
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lockroom::agent {

struct IndexFileEntry {
  std::string path;
  std::uint32_t mode = 0;  // git's: 0100644, 0100755, 0120000, 0160000
  std::string raw_id;      // 20 bytes
  std::uint32_t ctime_s = 0, ctime_ns = 0, mtime_s = 0, mtime_ns = 0, dev = 0, ino = 0, uid = 0, gid = 0, size = 0;
};

class IndexFile {
 public:
  // Parses the bytes of an index; `written_ns` is the file's mtime (for git's racy rule).
  static std::optional<IndexFile> parse(std::string_view data, std::int64_t written_ns);

  const IndexFileEntry* find(std::string_view path) const;
  // Whether some entry lies below the folder `path`.
  bool has_below(std::string_view path) const;
  // git's "clean" test: the file's lstat is what the entry recorded, and the entry is older than
  // the index by more than `margin_ns` (else it is racily clean: the content must be read). An
  // entry git smudged (size 0 for a blob that is not empty) is never clean.
  bool clean(const IndexFileEntry& entry, const struct stat& st, std::int64_t margin_ns) const;
  // What git does before writing an index: an entry racily clean against this index's time
  // (within `margin_ns` of it, or later) is kept when `still_same` confirms the file still holds
  // its blob (git refreshes it the same way), else gets size 0, so that git and clean() read the
  // content again.
  void settle_racy(std::int64_t margin_ns, const std::function<bool(const IndexFileEntry&)>& still_same);
  std::int64_t written_ns() const { return written_ns_; }
  void remove(std::string_view path);
  // Adds or replaces the entry for `path` with the stat data of the file now on disk.
  void put(const std::string& path, std::uint32_t mode, const std::string& raw_id, const struct stat& st);
  std::string serialize() const;  // with its trailing SHA-1, without extensions
  std::size_t size() const { return entries_.size(); }
  const std::vector<IndexFileEntry>& entries() const { return entries_; }

 private:
  std::uint32_t version_ = 2;
  std::int64_t written_ns_ = 0;
  std::vector<IndexFileEntry> entries_;  // sorted by path bytes
};

// Reads and parses the index at `path` (at most 256 MiB).
std::optional<IndexFile> read_index_file(const std::string& path);

}  // namespace lockroom::agent
