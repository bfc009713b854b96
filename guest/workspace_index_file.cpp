// IndexFile; see workspace_index_file.h.
#include "guest/workspace_index_file.h"

#include <openssl/evp.h>

#include <algorithm>

#include "guest/workspace_index.h"

namespace lockroom::agent {

namespace {

constexpr std::size_t kHeaderBytes = 12;
constexpr std::size_t kFixedBytes = 62;  // stat data (40), id (20), flags (2)
constexpr std::size_t kIdBytes = 20;
// The id of the empty blob, e69de29bb2d1d6434b8b29ae775ad8c2e48c5391, raw.
const std::string kEmptyBlob("\xe6\x9d\xe2\x9b\xb2\xd1\xd6\x43\x4b\x8b\x29\xae\x77\x5a\xd8\xc2\xe4\x8c\x53\x91", 20);

std::uint32_t be32(std::string_view b, std::size_t at) { return index_detail::be32(b, at); }
void put_be32(std::string& out, std::uint32_t v) {
  const char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
  out.append(b, 4);
}

std::uint32_t git_mode(const struct stat& st) {
  if (S_ISLNK(st.st_mode)) return 0120000;
  return (st.st_mode & S_IXUSR) ? 0100755 : 0100644;
}

bool by_path(const IndexFileEntry& e, std::string_view path) { return std::string_view(e.path) < path; }

}  // namespace

std::optional<IndexFile> IndexFile::parse(std::string_view data, std::int64_t written_ns) {
  if (data.size() < kHeaderBytes + kIdBytes || data.substr(0, 4) != "DIRC") return std::nullopt;
  IndexFile out;
  out.version_ = be32(data, 4);
  out.written_ns_ = written_ns;
  if (out.version_ != 2 && out.version_ != 3) return std::nullopt;
  std::uint32_t count = be32(data, 8);
  if (count > (data.size() - kHeaderBytes) / (kFixedBytes + 2)) return std::nullopt;
  const std::size_t end = data.size() - kIdBytes;
  out.entries_.reserve(count);
  std::size_t at = kHeaderBytes;
  for (std::uint32_t i = 0; i < count; ++i) {
    if (end - std::min(end, at) < kFixedBytes + 1) return std::nullopt;
    std::uint16_t flags = index_detail::be16(data, at + 60);
    if (flags & 0xf000) return std::nullopt;  // assume-valid, extended, or a merge stage
    std::size_t name_at = at + kFixedBytes;
    std::size_t nul = data.find('\0', name_at);
    if (nul == std::string_view::npos || nul >= end || nul == name_at) return std::nullopt;
    std::size_t name_len = nul - name_at;
    if ((flags & 0x0fff) != std::min<std::size_t>(name_len, 0x0fff)) return std::nullopt;
    IndexFileEntry e;
    e.ctime_s = be32(data, at);
    e.ctime_ns = be32(data, at + 4);
    e.mtime_s = be32(data, at + 8);
    e.mtime_ns = be32(data, at + 12);
    e.dev = be32(data, at + 16);
    e.ino = be32(data, at + 20);
    e.mode = be32(data, at + 24);
    e.uid = be32(data, at + 28);
    e.gid = be32(data, at + 32);
    e.size = be32(data, at + 36);
    e.raw_id.assign(data.substr(at + 40, kIdBytes));
    e.path.assign(data.substr(name_at, name_len));
    if (!out.entries_.empty() && !(out.entries_.back().path < e.path)) return std::nullopt;
    out.entries_.push_back(std::move(e));
    at += (kFixedBytes + name_len + 8) & ~std::size_t{7};
  }
  while (at < end) {  // extensions: an optional one starts with an upper-case letter
    if (end - at < 8 || data[at] < 'A' || data[at] > 'Z') return std::nullopt;
    std::uint32_t size = be32(data, at + 4);
    if (size > end - at - 8) return std::nullopt;
    at += 8 + size;
  }
  return out;
}

const IndexFileEntry* IndexFile::find(std::string_view path) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), path, by_path);
  return it != entries_.end() && it->path == path ? &*it : nullptr;
}

bool IndexFile::has_below(std::string_view path) const {
  std::string folder = std::string(path) + "/";
  auto it = std::lower_bound(entries_.begin(), entries_.end(), std::string_view(folder), by_path);
  return it != entries_.end() && it->path.compare(0, folder.size(), folder) == 0;
}

bool IndexFile::clean(const IndexFileEntry& e, const struct stat& st, std::int64_t margin_ns) const {
  std::int64_t mtime = std::int64_t{e.mtime_s} * 1000000000LL + e.mtime_ns, ctime = std::int64_t{e.ctime_s} * 1000000000LL + e.ctime_ns;
  if (e.size == 0 && e.raw_id != kEmptyBlob) return false;
  return e.mtime_s == static_cast<std::uint32_t>(st.st_mtim.tv_sec) && e.mtime_ns == static_cast<std::uint32_t>(st.st_mtim.tv_nsec) &&
         e.ctime_s == static_cast<std::uint32_t>(st.st_ctim.tv_sec) && e.ctime_ns == static_cast<std::uint32_t>(st.st_ctim.tv_nsec) &&
         e.ino == static_cast<std::uint32_t>(st.st_ino) && e.size == static_cast<std::uint32_t>(st.st_size) && e.mode == git_mode(st) &&
         mtime < written_ns_ - margin_ns && ctime < written_ns_ - margin_ns;
}

void IndexFile::settle_racy(std::int64_t margin_ns, const std::function<bool(const IndexFileEntry&)>& still_same) {
  for (auto& e : entries_) {
    std::int64_t mtime = std::int64_t{e.mtime_s} * 1000000000LL + e.mtime_ns;
    if (mtime >= written_ns_ - margin_ns && (e.mode & 0170000) != 0160000 && !still_same(e)) e.size = 0;
  }
}

void IndexFile::remove(std::string_view path) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), path, by_path);
  if (it != entries_.end() && it->path == path) entries_.erase(it);
}

void IndexFile::put(const std::string& path, std::uint32_t mode, const std::string& raw_id, const struct stat& st) {
  IndexFileEntry e;
  e.path = path;
  e.mode = mode;
  e.raw_id = raw_id;
  e.ctime_s = static_cast<std::uint32_t>(st.st_ctim.tv_sec);
  e.ctime_ns = static_cast<std::uint32_t>(st.st_ctim.tv_nsec);
  e.mtime_s = static_cast<std::uint32_t>(st.st_mtim.tv_sec);
  e.mtime_ns = static_cast<std::uint32_t>(st.st_mtim.tv_nsec);
  e.dev = static_cast<std::uint32_t>(st.st_dev);
  e.ino = static_cast<std::uint32_t>(st.st_ino);
  e.uid = static_cast<std::uint32_t>(st.st_uid);
  e.gid = static_cast<std::uint32_t>(st.st_gid);
  e.size = static_cast<std::uint32_t>(st.st_size);
  auto it = std::lower_bound(entries_.begin(), entries_.end(), std::string_view(path), by_path);
  if (it != entries_.end() && it->path == path) *it = std::move(e);
  else entries_.insert(it, std::move(e));
}

std::string IndexFile::serialize() const {
  std::string out;
  out.reserve(kHeaderBytes + entries_.size() * 96 + kIdBytes);
  out.append("DIRC", 4);
  put_be32(out, version_);
  put_be32(out, static_cast<std::uint32_t>(entries_.size()));
  for (const auto& e : entries_) {
    std::size_t start = out.size();
    for (std::uint32_t v : {e.ctime_s, e.ctime_ns, e.mtime_s, e.mtime_ns, e.dev, e.ino, e.mode, e.uid, e.gid, e.size}) put_be32(out, v);
    out.append(e.raw_id);
    std::size_t flags = std::min<std::size_t>(e.path.size(), 0x0fff);
    out.push_back(static_cast<char>(flags >> 8));
    out.push_back(static_cast<char>(flags & 0xff));
    out.append(e.path);
    std::size_t padded = (kFixedBytes + e.path.size() + 8) & ~std::size_t{7};
    out.append(start + padded - out.size(), '\0');
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(out.data(), out.size(), digest, &len, EVP_sha1(), nullptr);
  out.append(reinterpret_cast<char*>(digest), len);
  return out;
}

std::optional<IndexFile> read_index_file(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  auto data = read_regular_file(path, 256u << 20, true);
  if (!data) return std::nullopt;
  return IndexFile::parse(*data, stat_key(st).mtime_ns);
}

}  // namespace lockroom::agent
