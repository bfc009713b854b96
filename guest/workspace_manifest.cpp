// build_manifest; see workspace_manifest.h.
#include "guest/workspace_manifest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <unordered_map>

#include "guest/workspace_git.h"
#include "guest/workspace_index_file.h"
#include "guest/workspace_listing.h"

namespace lockroom::agent {

namespace channel = protocol::channel;

namespace {

std::string mib(std::int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

std::string biggest_files(std::vector<std::pair<std::int64_t, std::string>> sizes, std::size_t top = 3) {
  std::sort(sizes.begin(), sizes.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out;
  for (std::size_t i = 0; i < sizes.size() && i < top; ++i) out += (i ? ", " : "") + sizes[i].second + " (" + mib(sizes[i].first) + ")";
  return out;
}

// The content of a file that kept changing while it was hashed: read once, up to `max` bytes.
std::optional<std::string> read_once(int root, const std::string& path, std::int64_t max) {
  int fd = ::openat(root, path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return std::nullopt;
  std::string content;
  char buf[64u << 10];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    content.append(buf, static_cast<std::size_t>(n));
    if (static_cast<std::int64_t>(content.size()) > max) break;
  }
  ::close(fd);
  return content;
}

}  // namespace

bool FolderCheck::all_pass(const std::string& path) {
  for (std::size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    std::string dir = path.substr(0, slash);
    auto it = known_.find(dir);
    if (it == known_.end()) it = known_.emplace(dir, test_(root_, dir)).first;
    if (!it->second) return false;
  }
  return true;
}

bool is_real_folder(int root, const std::string& dir) {
  struct stat st{};
  return ::fstatat(root, dir.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

ContentCapture::ContentCapture(const channel::InlineBounds& bounds)
    : on_(true), max_file_bytes_(static_cast<std::uint64_t>(bounds.max_file_bytes)), max_total_bytes_(static_cast<std::uint64_t>(bounds.max_total_bytes)) {}

std::uint64_t ContentCapture::room() const { return on_ ? std::min(max_file_bytes_, max_total_bytes_ - total_) : 0; }

void ContentCapture::keep(const std::string& path, std::string bytes) {
  if (!on_ || bytes.size() > room()) return;
  total_ += bytes.size();
  contents_[path] = std::move(bytes);
}

const std::string* ContentCapture::find(const std::string& path) const {
  auto it = contents_.find(path);
  return it == contents_.end() ? nullptr : &it->second;
}

std::string* ContentCapture::find(const std::string& path) {
  auto it = contents_.find(path);
  return it == contents_.end() ? nullptr : &it->second;
}

std::vector<std::string> split_z(const std::string& text) {
  std::vector<std::string> paths;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\0', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) paths.emplace_back(text, start, end - start);
    start = end + 1;
  }
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  return paths;
}

std::string biggest_folders(const std::vector<std::string>& paths, std::size_t top) {
  std::map<std::string, std::size_t> counts;
  for (const auto& p : paths) {
    std::size_t slash = p.find('/');
    counts[slash == std::string::npos ? std::string(".") : p.substr(0, slash)]++;
  }
  std::vector<std::pair<std::size_t, std::string>> ranked;
  for (auto& [dir, n] : counts) ranked.emplace_back(n, dir);
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out;
  for (std::size_t i = 0; i < ranked.size() && i < top; ++i)
    out += (i ? ", " : "") + (ranked[i].second == "." ? std::string("the top folder") : ranked[i].second) + " (" + std::to_string(ranked[i].first) + " files)";
  return out;
}

std::optional<channel::ManifestEntry> describe_file(int dir, const std::string& path, struct stat& st, const channel::WorkspaceBounds& bounds,
                                                    KnownIds& known, BlobHasher& hasher, std::int64_t started, Manifest& m) {
  StatCache& cache = known.cache;
  channel::ManifestEntry e;
  e.path = path;
  std::string raw;
  if (S_ISLNK(st.st_mode)) {
    char target[channel::kMaxPath];
    ssize_t n = ::readlinkat(dir, path.c_str(), target, sizeof target);
    if (n < 0) {
      m.skipped++;
      return std::nullopt;
    }
    e.mode = channel::kModeSymlink;
    e.size = static_cast<std::uint64_t>(n);
    hasher.begin(e.size);
    hasher.update(std::string_view(target, static_cast<std::size_t>(n)));
    raw = hasher.finish_raw();
    if (m.captured.on()) m.captured.keep(path, std::string(target, static_cast<std::size_t>(n)));
  } else {
    StatKey key = stat_key(st);
    const IndexFileEntry* indexed = nullptr;
    EarlierHash* early = nullptr;
    if (known.earlier)
      if (auto it = known.earlier->find(path); it != known.earlier->end() && it->second.key == key) early = &it->second;
    if (static_cast<std::uint64_t>(st.st_size) > channel::max_entry_size(channel::kModeFile, bounds)) {
      raw.assign(20, '\0');  // too big to take back: listed unread, for the host to refuse by name
    } else if (early && (early->bytes || static_cast<std::uint64_t>(st.st_size) > m.captured.room())) {  // else read it for its bytes
      raw = early->raw_id;  // hashed when it was written, untouched since
      cache.store(path, key, raw, early->hashed_at_ns);
      if (early->bytes && m.captured.on()) {
        m.captured.keep(path, std::move(*early->bytes));
        early->bytes.reset();  // given away: a listing after this one reads the file again for them
      }
      m.hashed++;
    } else if (auto hit = cache.find(path, key)) {
      raw = *hit;
      m.cached++;
    } else if (known.index && (indexed = known.index->find(path)) && known.index->clean(*indexed, st, StatCache::kRacyMarginNs)) {
      raw = indexed->raw_id;  // git's index vouches for it: the stat cache of the last checkout or git add
      cache.store(path, key, raw, known.index->written_ns());
      m.cached++;
    } else {
      KeptContent kept;
      kept.max_bytes = m.captured.room();
      auto hashed = hash_regular(dir, path, hasher, st, m.captured.on() ? &kept : nullptr);
      if (!hashed && hashed.error().code == ErrorCode::kNotFound) {
        m.skipped++;  // gone since git listed it
        return std::nullopt;
      }
      if (hashed) {
        raw = *hashed;
        cache.store(path, stat_key(st), raw, started);
        if (kept.kept) m.captured.keep(path, std::move(kept.bytes));
      } else {
        auto content = read_once(dir, path, bounds.max_file_bytes);  // a busy writer: hash one read of it
        if (!content) {
          m.skipped++;
          return std::nullopt;
        }
        hasher.begin(content->size());
        hasher.update(*content);
        raw = hasher.finish_raw();
        st.st_size = static_cast<off_t>(content->size());
        if (m.captured.on()) m.captured.keep(path, std::move(*content));
      }
      m.hashed++;
    }
    e.mode = (st.st_mode & S_IXUSR) ? channel::kModeExecutable : channel::kModeFile;
    e.size = static_cast<std::uint64_t>(st.st_size);
  }
  e.id = channel::id_to_hex(raw);
  return e;
}

std::variant<Manifest, RpcError> build_manifest(const std::string& root, const channel::WorkspaceBounds& bounds, StatCache& cache,
                                                WorkspaceListing& listing, const std::optional<channel::InlineBounds>& capture, EarlierHashes* earlier) {
  const std::string what = "workspace.manifest: " + root;
  struct stat git_dir{};
  if (::stat((root + "/.git").c_str(), &git_dir) != 0)
    return make_rpc_error(channel::agent_error::kNotARepository, what + " is not a git workspace (no .git): import a snapshot first");

  // Taken before anything is read: entries hashed from here on are judged against it.
  std::int64_t started = realtime_ns();
  auto index = read_index_file(root + "/.git/index");  // none (or one this code does not read): git lists, files are hashed
  const std::size_t max_out = static_cast<std::size_t>(std::min<std::int64_t>(bounds.max_entries * 256 + (1 << 20), 256LL << 20));
  auto checked = [&](const Result<GitRun>& listed) -> std::optional<RpcError> {
    if (!listed) return make_rpc_error(channel::agent_error::kIoError, what + ": " + listed.error().message);
    if (listed->out_truncated)
      return make_rpc_error(channel::agent_error::kLimitReached, what + " lists more files than the limit of " + std::to_string(bounds.max_entries) +
                                                                    " can hold (git's listing went over " + mib(static_cast<std::int64_t>(max_out)) + ")");
    if (!listed->ok()) return make_rpc_error(channel::agent_error::kIoError, what + ": git ls-files failed: " + listed->problem());
    return std::nullopt;
  };
  auto candidates = listing.list(root, index, max_out, checked);
  if (auto* error = std::get_if<RpcError>(&candidates)) return *error;
  std::vector<std::string>& paths = std::get<std::vector<std::string>>(candidates);
  if (static_cast<std::int64_t>(paths.size()) > bounds.max_entries)
    return make_rpc_error(channel::agent_error::kLimitReached, what + " has " + std::to_string(paths.size()) + " files; the limit is " +
                                                                  std::to_string(bounds.max_entries) + ". Most are in " + biggest_folders(paths));

  int dir = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return errno_error(errno, what);
  Manifest m;
  if (capture) m.captured = ContentCapture(*capture);
  m.listed_by_git = listing.last_from_git();
  FolderCheck parents(dir, is_real_folder);  // not below a symlink to somewhere else
  BlobHasher hasher;
  KnownIds known{cache, index ? &*index : nullptr, earlier};
  std::vector<std::pair<std::int64_t, std::string>> sizes;
  for (const auto& path : paths) {
    struct stat st{};
    // A path the host would refuse (a ".GIT" folder the agent made, say) is left out rather than
    // sent: the host treats it as a lie.
    if (path.back() == '/' || !channel::workspace_path_problem(path).empty() || !parents.all_pass(path) || ::fstatat(dir, path.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !(S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))) {
      m.skipped++;
      continue;
    }
    auto e = describe_file(dir, path, st, bounds, known, hasher, started, m);
    if (!e) continue;
    if (e->size <= channel::max_entry_size(e->mode, bounds)) {  // a bigger one is the host's to refuse, and not counted
      m.bytes += static_cast<std::int64_t>(e->size);
      sizes.emplace_back(static_cast<std::int64_t>(e->size), path);
    }
    m.entries.push_back(std::move(*e));
  }
  ::close(dir);
  if (m.bytes > bounds.max_total_bytes)
    return make_rpc_error(channel::agent_error::kTooLarge, what + " holds " + mib(m.bytes) + " in " + std::to_string(m.entries.size()) +
                                                               " files; the limit is " + mib(bounds.max_total_bytes) + ". The biggest: " + biggest_files(sizes));
  return m;
}

}  // namespace lockroom::agent
