// WorkspaceListing; see workspace_listing.h.
#include "guest/workspace_listing.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "guest/workspace_manifest.h"

namespace lockroom::agent {

namespace {

StatKey key_of(const std::string& path) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) return StatKey{};
  return stat_key(st);
}

std::string base_name(const std::string& path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The union of two sorted, unique lists.
std::vector<std::string> merged(const std::vector<IndexFileEntry>& tracked, const std::vector<std::string>& untracked) {
  std::vector<std::string> out;
  out.reserve(tracked.size() + untracked.size());
  std::size_t u = 0;
  for (const auto& e : tracked) {
    while (u < untracked.size() && untracked[u] < e.path) out.push_back(untracked[u++]);
    if (u < untracked.size() && untracked[u] == e.path) ++u;
    out.push_back(e.path);
  }
  while (u < untracked.size()) out.push_back(untracked[u++]);
  return out;
}

}  // namespace

std::variant<std::vector<std::string>, RpcError> WorkspaceListing::list(const std::string& root, const std::optional<IndexFile>& index,
                                                                         std::size_t max_out, const GitCheck& check) {
  if (index && valid_ && still_valid(*index)) {
    last_from_git_ = false;
    return merged(index->entries(), untracked_);
  }
  last_from_git_ = true;
  valid_ = false;
  std::int64_t started = realtime_ns();
  GitOptions options;
  options.max_out = max_out;
  if (!index) {
    auto listed = run_git(root, {"ls-files", "-z", "--cached", "--others", "--exclude-standard", "--deduplicate"}, options);
    if (auto error = check(listed)) return *error;
    return split_z(listed->out);
  }
  auto listed = run_git(root, {"ls-files", "-z", "--others", "--exclude-standard"}, options);
  if (auto error = check(listed)) return *error;
  std::vector<std::string> untracked = split_z(listed->out);
  std::vector<std::string> out = merged(index->entries(), untracked);
  remember(root, *index, std::move(untracked), started);
  return out;
}

bool WorkspaceListing::still_valid(const IndexFile& index) const {
  // No path left the index since git listed (it could be untracked now, or ignored).
  const auto& now = index.entries();
  std::size_t at = 0;
  for (const auto& path : index_paths_) {
    while (at < now.size() && now[at].path < path) ++at;
    if (at == now.size() || now[at].path != path) return false;
  }
  for (const auto& w : watched_)
    if (!(key_of(w.path) == w.key)) return false;
  return true;
}

void WorkspaceListing::remember(const std::string& root, const IndexFile& index, std::vector<std::string> untracked, std::int64_t started) {
  watched_.clear();
  // What decides which files git ignores.
  std::vector<std::string> inputs = {root + "/.git/info/exclude", root + "/.git/config", "/etc/gitconfig"};
  const char* home = std::getenv("HOME");
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  std::string config_dir = xdg && *xdg ? std::string(xdg) : home && *home ? std::string(home) + "/.config" : std::string();
  if (home && *home) inputs.push_back(std::string(home) + "/.gitconfig");
  if (!config_dir.empty()) {
    inputs.push_back(config_dir + "/git/ignore");
    inputs.push_back(config_dir + "/git/config");
  }
  for (const auto& e : index.entries())
    if (base_name(e.path) == ".gitignore") inputs.push_back(root + "/" + e.path);
  for (const auto& p : untracked)
    if (base_name(p) == ".gitignore") inputs.push_back(root + "/" + p);
  for (auto& path : inputs) watched_.push_back({path, key_of(path)});

  // Every folder of the worktree, ignored ones too (a new file there may not be ignored), but not
  // .git and not inside a nested repository (git lists it as one entry).
  std::vector<std::string> folders = {root};
  while (!folders.empty()) {
    std::string dir = std::move(folders.back());
    folders.pop_back();
    if (watched_.size() > kMaxFolders + inputs.size()) return;  // too many to watch: git every time
    watched_.push_back({dir, key_of(dir)});
    if (dir != root) {
      struct stat st{};
      if (::lstat((dir + "/.git").c_str(), &st) == 0) continue;  // a nested repository
    }
    DIR* d = ::opendir(dir.c_str());
    if (!d) return;
    while (const dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0 || std::strcmp(e->d_name, ".git") == 0) continue;
      bool is_dir = e->d_type == DT_DIR;
      std::string path = dir + "/" + e->d_name;
      if (e->d_type == DT_UNKNOWN) {
        struct stat st{};
        is_dir = ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
      }
      if (is_dir) folders.push_back(std::move(path));
    }
    ::closedir(d);
  }
  // A folder changed in the same clock tick as git read it could look unchanged later.
  for (const auto& w : watched_)
    if (w.key.mtime_ns > started - StatCache::kRacyMarginNs || w.key.ctime_ns > started - StatCache::kRacyMarginNs) return;
  untracked_ = std::move(untracked);
  index_paths_.clear();
  for (const auto& e : index.entries()) index_paths_.push_back(e.path);
  valid_ = true;
}

}  // namespace lockroom::agent
