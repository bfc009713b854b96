// Writing a snapshot's new objects into lockroom's store. Blobs of small files, the trees and the
// commit collect in memory (libgit2's mempack backend, added to the store's object database) and
// reach the store as one packfile (with its index) at flush(): as loose objects, a 3,000-file
// snapshot cost three times the CPU, most of it creating files. Only objects the store did not
// have go into the pack. Files from 1 MiB on are streamed to loose objects in 64 KiB pieces, so
// no large file is ever held in memory, and the collected blobs are flushed whenever they pass
// 64 MiB. Blocking I/O; used by take_snapshot() on a worker thread.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <vector>

#include "server/common/result.h"
#include "server/workspace/git_util.h"
#include "server/workspace/snapshot/workspace_scan.h"

namespace lockroom::workspace::snapshot {

struct StoredBlob {
  git_oid id{};
  struct stat stat {};  // what the file was when it was read (fstat of the open file)
};

class ObjectWriter {
 public:
  static constexpr std::uint64_t kDefaultFlushAfter = 64ull << 20;

  // From now on, objects written through `store` (blobs here, trees, the commit) collect in
  // memory until flush(), which store_entry() also calls once `flush_after` bytes of new blobs
  // have collected. `store` must outlive the writer.
  static Result<ObjectWriter> attach(git_repository* store, const std::string& store_dir,
                                     std::uint64_t flush_after = kDefaultFlushAfter);

  // The store's object database: sees the store and everything written so far.
  git_odb* odb() const { return odb_.get(); }

  // Copies one selected entry into the store as a blob: the link target for a symlink, the content
  // for a file. `path` is absolute. A file that shrinks while it is read is read again; one that
  // grows is taken up to the size it had when opened. kNotFound if it disappeared since the scan;
  // kLimitExceeded if it has grown past `max_bytes` since the scan.
  Result<StoredBlob> store_entry(const std::string& path, EntryKind kind, std::uint64_t max_bytes);

  // Writes everything collected so far into the store as one packfile. With `commit` (written
  // through the store since the last flush), its new trees and itself are included.
  Result<void> flush(const git_oid* commit = nullptr);

 private:
  bool pending(const git_oid& id) const;  // collected in memory, not yet in the store
  void note_if_new(const git_oid& id, std::uint64_t bytes);
  Result<void> add_new_trees(const git_oid& commit);

  Result<bool> write_small(int fd, std::uint64_t size, const std::string& path, git_oid& id);
  Result<bool> write_streamed(int fd, std::uint64_t size, const std::string& path, git_oid& id);
  Result<StoredBlob> store_symlink(const std::string& path);

  git_repository* store_ = nullptr;
  OdbPtr odb_;                        // the store's, with the in-memory backend on top
  git_odb_backend* pending_ = nullptr;  // the in-memory backend (owned by odb_)
  OdbPtr loose_;                      // loose objects only: where large files are streamed
  std::vector<git_oid> new_objects_;  // what the next flush packs
  std::uint64_t pending_bytes_ = 0;
  std::uint64_t flush_after_ = kDefaultFlushAfter;
  std::string buffer_;                // reused for small files
};

}  // namespace lockroom::workspace::snapshot
