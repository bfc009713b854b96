// Git blob ids computed in the guest, and the stat cache that spares re-hashing unchanged files.
//
// A blob id is SHA-1 over "blob <size>\0" and the content (OpenSSL's EVP_sha1; the guest has no
// libgit2). hash_regular() reads a file through an open descriptor and makes sure what it hashed
// is one consistent version: the size and the change time must be the same before and after the
// read, or it reads again (a writer was busy). StatCache remembers path → (inode, size, mtime,
// ctime, mode) → id; an entry is only trusted when the file's times are older than the moment it
// was hashed by more than a clock tick (git's "racily clean" rule), so a write in the same tick
// as the hash can never hide. Loop thread only.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "server/common/result.h"

namespace lockroom::agent {

class BlobHasher {
 public:
  BlobHasher();
  ~BlobHasher();
  BlobHasher(const BlobHasher&) = delete;
  BlobHasher& operator=(const BlobHasher&) = delete;

  void begin(std::uint64_t size);  // hashes the "blob <size>\0" header
  void update(std::string_view bytes);
  std::string finish_raw();        // 20 bytes; begin() again for the next blob

 private:
  void* ctx_;  // EVP_MD_CTX
};

// The blob id (40 hex) of bytes held in memory.
std::string blob_id(std::string_view content);

// The bytes a hash was computed from, kept when asked (a partial manifest carries them inline):
// only a version of at most `max_bytes`.
struct KeptContent {
  std::uint64_t max_bytes = 0;
  bool kept = false;  // `bytes` are exactly the version whose id was returned
  std::string bytes;
};

// Hashes the regular file `path` (relative to `dir_fd`) without following a symlink. On success
// `st` describes the version that was hashed and the result is the raw 20-byte id; with `keep`,
// the bytes of that same read are left in it when the version is small enough.
Result<std::string> hash_regular(int dir_fd, const std::string& path, BlobHasher& hasher, struct stat& st, KeptContent* keep = nullptr);

struct StatKey {
  std::uint64_t ino = 0;
  std::int64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
  std::uint32_t mode = 0;
  bool operator==(const StatKey& o) const {
    return ino == o.ino && size == o.size && mtime_ns == o.mtime_ns && ctime_ns == o.ctime_ns && mode == o.mode;
  }
};
StatKey stat_key(const struct stat& st);

class StatCache {
 public:
  // Entries whose times are this close to the hashing moment are not trusted later.
  static constexpr std::int64_t kRacyMarginNs = 100'000'000;

  explicit StatCache(std::size_t max_entries) : max_entries_(max_entries) {}
  // The raw id when `path` was hashed with exactly this stat and not racily.
  std::optional<std::string> find(const std::string& path, const StatKey& key) const;
  // `hashed_at_ns`: CLOCK_REALTIME read before the content was read.
  void store(const std::string& path, const StatKey& key, std::string raw_id, std::int64_t hashed_at_ns);
  void clear() { entries_.clear(); }
  std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    StatKey key;
    std::string raw_id;
  };
  std::size_t max_entries_;
  std::unordered_map<std::string, Entry> entries_;
};

// A file hashed before a manifest began, whose caller vouches that nothing touched it since (the
// workspace watch saw no event on it): trusted while its stat is still `key`.
struct EarlierHash {
  StatKey key;
  std::string raw_id;
  std::int64_t hashed_at_ns = 0;     // CLOCK_REALTIME before the read
  std::optional<std::string> bytes;  // the bytes hashed, when they were kept
};
using EarlierHashes = std::unordered_map<std::string, EarlierHash>;

std::int64_t realtime_ns();
std::int64_t monotonic_ns();  // for durations

}  // namespace lockroom::agent
