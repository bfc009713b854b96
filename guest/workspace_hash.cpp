// Blob ids and the stat cache; see workspace_hash.h.
#include "guest/workspace_hash.h"

#include <fcntl.h>
#include <unistd.h>

#include <openssl/evp.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>

#include "protocol/channel/messages.h"

namespace lockroom::agent {

namespace {
constexpr int kReadAttempts = 4;
constexpr std::size_t kChunk = 64u << 10;

EVP_MD_CTX* md(void* ctx) { return static_cast<EVP_MD_CTX*>(ctx); }
}  // namespace

BlobHasher::BlobHasher() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_) throw std::runtime_error("OpenSSL cannot make a digest context");
}

BlobHasher::~BlobHasher() { EVP_MD_CTX_free(md(ctx_)); }

void BlobHasher::begin(std::uint64_t size) {
  if (EVP_DigestInit_ex(md(ctx_), EVP_sha1(), nullptr) != 1) throw std::runtime_error("OpenSSL has no SHA-1");
  std::string header = "blob " + std::to_string(size);
  header.push_back('\0');
  update(header);
}

void BlobHasher::update(std::string_view bytes) {
  if (!bytes.empty()) EVP_DigestUpdate(md(ctx_), bytes.data(), bytes.size());
}

std::string BlobHasher::finish_raw() {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(md(ctx_), out, &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string blob_id(std::string_view content) {
  BlobHasher h;
  h.begin(content.size());
  h.update(content);
  return protocol::channel::id_to_hex(h.finish_raw());
}

StatKey stat_key(const struct stat& st) {
  StatKey k;
  k.ino = st.st_ino;
  k.size = st.st_size;
  k.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
  k.ctime_ns = static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1000000000LL + st.st_ctim.tv_nsec;
  k.mode = st.st_mode;
  return k;
}

std::int64_t realtime_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

std::int64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

Result<std::string> hash_regular(int dir_fd, const std::string& path, BlobHasher& hasher, struct stat& st, KeptContent* keep) {
  if (keep) keep->kept = false;
  int fd = ::openat(dir_fd, path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return make_error(ErrorCode::kNotFound, path + ": " + std::strerror(errno));
  char buf[kChunk];
  for (int attempt = 0; attempt < kReadAttempts; ++attempt) {
    struct stat before{}, after{};
    if (::fstat(fd, &before) != 0 || !S_ISREG(before.st_mode)) break;
    std::uint64_t size = static_cast<std::uint64_t>(before.st_size);
    hasher.begin(size);
    std::string* kept = keep && size <= keep->max_bytes ? &keep->bytes : nullptr;
    if (keep) keep->bytes.clear();
    if (kept) kept->reserve(static_cast<std::size_t>(size));
    std::uint64_t got = 0;
    bool failed = false;
    while (got <= size) {
      ssize_t n = ::pread(fd, buf, sizeof buf, static_cast<off_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        failed = true;
        break;
      }
      if (n == 0) break;
      std::size_t use = static_cast<std::size_t>(std::min<std::uint64_t>(static_cast<std::uint64_t>(n), size - std::min(size, got)));
      hasher.update(std::string_view(buf, use));
      if (kept) kept->append(buf, use);
      got += static_cast<std::uint64_t>(n);
    }
    if (failed) {
      int err = errno;
      ::close(fd);
      return make_error(ErrorCode::kUnavailable, "reading " + path + " failed: " + std::strerror(err));
    }
    std::string raw = hasher.finish_raw();
    if (::fstat(fd, &after) != 0) break;
    if (got == size && stat_key(before) == stat_key(after)) {
      ::close(fd);
      st = after;
      if (keep) keep->kept = kept != nullptr;
      return raw;
    }
  }
  ::close(fd);
  return make_error(ErrorCode::kUnavailable, path + " kept changing while it was read (" + std::to_string(kReadAttempts) + " attempts)");
}

std::optional<std::string> StatCache::find(const std::string& path, const StatKey& key) const {
  auto it = entries_.find(path);
  if (it == entries_.end() || !(it->second.key == key)) return std::nullopt;
  return it->second.raw_id;
}

void StatCache::store(const std::string& path, const StatKey& key, std::string raw_id, std::int64_t hashed_at_ns) {
  // A change in the same clock tick as the read could leave every field as it was: such an entry
  // would be trusted wrongly, so it is not kept (it is hashed again next time).
  if (key.mtime_ns > hashed_at_ns - kRacyMarginNs || key.ctime_ns > hashed_at_ns - kRacyMarginNs) {
    entries_.erase(path);
    return;
  }
  if (entries_.size() >= max_entries_ && !entries_.count(path)) return;
  entries_[path] = Entry{key, std::move(raw_id)};
}

}  // namespace lockroom::agent
