// Reading git's index file (`.git/index`) in the agent without starting git: the entry count
// from the header, and the entries' blob ids and stat data (what git saw when it last wrote each
// file). The manifest and a sync read the whole index strictly through workspace_index_file.h.
//
// Only what a plain checkout writes is understood: signature "DIRC", versions 2 and 3 (version 4
// compresses paths; its entries are not read), stage-0 entries. Anything else gives nullopt and
// the caller falls back to asking git. Pure functions over bytes, plus a bounded file read.
// Header-only: the agent's and the tests' builds take it without a source list of their own.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "guest/workspace_hash.h"

namespace lockroom::agent {

struct IndexEntry {
  std::string path;
  std::uint32_t mode = 0;  // git's: 0100644, 0100755, 0120000, 0160000
  std::string raw_id;      // 20 bytes
  std::int64_t ctime_ns = 0;
  std::int64_t mtime_ns = 0;
  std::uint32_t ino = 0;   // truncated to 32 bits, as git stores it
  std::uint32_t size = 0;  // truncated to 32 bits, as git stores it
};

namespace index_detail {
inline std::uint32_t be32(std::string_view b, std::size_t at) {
  return (std::uint32_t{static_cast<unsigned char>(b[at])} << 24) | (std::uint32_t{static_cast<unsigned char>(b[at + 1])} << 16) |
         (std::uint32_t{static_cast<unsigned char>(b[at + 2])} << 8) | std::uint32_t{static_cast<unsigned char>(b[at + 3])};
}
inline std::uint16_t be16(std::string_view b, std::size_t at) {
  return static_cast<std::uint16_t>((static_cast<unsigned char>(b[at]) << 8) | static_cast<unsigned char>(b[at + 1]));
}
constexpr std::size_t kHeaderBytes = 12;
constexpr std::size_t kEntryFixedBytes = 62;  // stat data (40), id (20), flags (2)
}  // namespace index_detail

// The entry count of an index whose first bytes are `header` (at least 12): nullopt unless the
// signature is "DIRC" and the version 2, 3 or 4.
inline std::optional<std::uint32_t> index_entry_count(std::string_view header) {
  using namespace index_detail;
  if (header.size() < kHeaderBytes || header.substr(0, 4) != "DIRC") return std::nullopt;
  std::uint32_t version = be32(header, 4);
  if (version < 2 || version > 4) return std::nullopt;
  return be32(header, 8);
}

// The stage-0 entries of a version 2 or 3 index held in `data`, in index order; nullopt for
// another version, a truncated or malformed entry, or a count the bytes cannot hold. Entries with
// extended flags (intent-to-add, skip-worktree) or a merge stage are left out.
inline std::optional<std::vector<IndexEntry>> index_entries(std::string_view data) {
  using namespace index_detail;
  auto count = index_entry_count(data);
  if (!count) return std::nullopt;
  std::uint32_t version = be32(data, 4);
  if (version == 4 || *count > (data.size() - kHeaderBytes) / (kEntryFixedBytes + 2)) return std::nullopt;
  std::vector<IndexEntry> out;
  out.reserve(*count);
  std::size_t at = kHeaderBytes;
  for (std::uint32_t i = 0; i < *count; ++i) {
    if (data.size() - at < kEntryFixedBytes) return std::nullopt;
    std::uint16_t flags = be16(data, at + 60);
    bool extended = (flags & 0x4000) != 0;
    if (extended && version < 3) return std::nullopt;
    std::size_t name_at = at + kEntryFixedBytes + (extended ? 2 : 0);
    if (name_at >= data.size()) return std::nullopt;
    std::size_t nul = data.find('\0', name_at);
    if (nul == std::string_view::npos) return std::nullopt;
    std::size_t name_len = nul - name_at;
    if ((flags & 0x0fff) != 0x0fff && (flags & 0x0fff) != name_len) return std::nullopt;
    std::size_t next = at + ((kEntryFixedBytes + (extended ? 2 : 0) + name_len + 8) & ~std::size_t{7});
    if (next > data.size() || name_len == 0) return std::nullopt;
    bool stage0 = (flags & 0x3000) == 0;
    if (stage0 && !extended) {
      IndexEntry e;
      e.ctime_ns = std::int64_t{be32(data, at)} * 1000000000LL + be32(data, at + 4);
      e.mtime_ns = std::int64_t{be32(data, at + 8)} * 1000000000LL + be32(data, at + 12);
      e.ino = be32(data, at + 20);
      e.mode = be32(data, at + 24);
      e.size = be32(data, at + 36);
      e.raw_id.assign(data.substr(at + 40, 20));
      e.path.assign(data.substr(name_at, name_len));
      out.push_back(std::move(e));
    }
    at = next;
  }
  return out;
}

// Up to `max_bytes` of the regular file `path` (all of it when `whole`, else nullopt when it is
// larger); nullopt when it cannot be read.
inline std::optional<std::string> read_regular_file(const std::string& path, std::size_t max_bytes, bool whole) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return std::nullopt;
  struct stat st{};
  std::optional<std::string> out;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (!whole || static_cast<std::uint64_t>(st.st_size) <= max_bytes)) {
    std::string bytes(std::min(static_cast<std::size_t>(st.st_size), max_bytes), '\0');
    std::size_t got = 0;
    while (got < bytes.size()) {
      ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    if (got == bytes.size()) out = std::move(bytes);
  }
  ::close(fd);
  return out;
}
inline std::optional<std::string> read_file_head(const std::string& path, std::size_t bytes) { return read_regular_file(path, bytes, false); }

}  // namespace lockroom::agent
