// checkout_workspace; see workspace_checkout.h.
#include "guest/workspace_checkout.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "guest/workspace_git.h"
#include "guest/workspace_hash.h"
#include "guest/workspace_index.h"
#include "guest/workspace_manifest.h"

namespace lockroom::agent {

namespace channel = protocol::channel;
namespace agent_error = channel::agent_error;

namespace {

// Whether the workspace's index is split (`core.splitIndex`): then .git/index holds only part of
// the entries and is not read here. Also true when .git cannot be listed.
bool has_shared_index(const std::string& root) {
  DIR* dir = ::opendir((root + "/.git").c_str());
  if (!dir) return true;
  bool found = false;
  while (const dirent* e = ::readdir(dir))
    if (std::strncmp(e->d_name, "sharedindex.", 12) == 0) found = true;
  ::closedir(dir);
  return found;
}

// One git step of a checkout; an error names the step and git's reason.
struct Steps {
  std::string root;
  std::string what;
  std::optional<RpcError> error;

  std::optional<GitRun> run(const std::vector<std::string>& args, std::size_t max_out = 64u << 20) {
    if (error) return std::nullopt;
    GitOptions options;
    options.max_out = max_out;
    auto r = run_git(root, args, options);
    if (!r) {
      error = make_rpc_error(agent_error::kIoError, what + ": " + r.error().message);
      return std::nullopt;
    }
    return std::move(*r);
  }
  bool must(const std::vector<std::string>& args, const char* step) {
    auto r = run(args);
    if (r && !r->ok()) error = make_rpc_error(agent_error::kIoError, what + ": " + step + " failed: " + r->problem());
    return r && r->ok();
  }
  std::vector<std::string> paths(const std::vector<std::string>& args) {
    auto r = run(args);
    return r && r->ok() && !r->out_truncated ? split_z(r->out) : std::vector<std::string>{};
  }
  // A git run fed `input` on stdin.
  std::optional<GitRun> run_input(const std::vector<std::string>& args, std::string input) {
    if (error) return std::nullopt;
    GitOptions options;
    options.stdin_data = std::move(input);
    auto r = run_git(root, args, options);
    if (!r) {
      error = make_rpc_error(agent_error::kIoError, what + ": " + r.error().message);
      return std::nullopt;
    }
    return std::move(*r);
  }
  // The object id each of `names` (revisions, one per line, no newlines in them) resolves to, or ""
  // when it does not: one `git cat-file --batch-check` fed the names on stdin.
  std::vector<std::string> look_up(const std::vector<std::string>& names) {
    std::vector<std::string> ids(names.size());
    std::string input;
    for (const auto& n : names) input += n + "\n";
    auto r = run_input({"cat-file", "--batch-check=%(objectname)"}, input);
    if (!r) return ids;
    if (!r->ok()) {
      error = make_rpc_error(agent_error::kIoError, what + ": git cat-file failed: " + r->problem());
      return ids;
    }
    std::size_t start = 0;
    for (auto& id : ids) {  // "<id>" when found, "<name> missing" (or "ambiguous") when not
      std::size_t end = r->out.find('\n', start);
      if (end == std::string::npos) break;
      std::string line = r->out.substr(start, end - start);
      if (line.size() == 40 && line.find_first_not_of("0123456789abcdef") == std::string::npos) id = line;
      start = end + 1;
    }
    return ids;
  }
  // `read-tree -m -u base commit` after taking the worktree's version of `paths` into the index (each
  // already equals COMMIT's, so read-tree keeps it). The index is put back as it was when that
  // read-tree still fails: a refusal changes nothing.
  std::optional<GitRun> read_tree_taking(const std::vector<std::string>& paths, const std::string& base, const std::string& commit) {
    std::string index = root + "/.git/index", kept = root + "/.git/lockroom-index-before-sync";
    ::unlink(kept.c_str());
    if (::link(index.c_str(), kept.c_str()) != 0) {  // git replaces the index by rename: the old file stays intact
      error = make_rpc_error(agent_error::kIoError, what + ": cannot keep a copy of " + index + ": " + std::strerror(errno));
      return std::nullopt;
    }
    std::string input;
    for (const auto& p : paths) input += p + '\0';
    auto taken = run_input({"update-index", "--add", "--remove", "-z", "--stdin"}, input);
    std::optional<GitRun> read;
    if (taken && taken->ok()) read = run({"read-tree", "-m", "-u", base, commit});
    if (read && read->ok()) {
      ::unlink(kept.c_str());
      return read;
    }
    ::rename(kept.c_str(), index.c_str());
    if (!error && !read) error = make_rpc_error(agent_error::kIoError, what + ": taking the guest's " + std::to_string(paths.size()) +
                                                                            " already-updated file(s) into the index failed: " + taken->problem());
    return read;
  }
  // How many entries the index holds: its header says, unless the index is split (the header
  // counts only part of it) or unreadable; then `git ls-files` counts.
  std::int64_t index_files() {
    if (!has_shared_index(root)) {
      if (auto head = read_file_head(root + "/.git/index", 12))
        if (auto count = index_entry_count(*head)) return *count;
    }
    auto files = run({"ls-files", "-z", "--cached"});
    if (files && files->ok() && !files->out_truncated) return static_cast<std::int64_t>(std::count(files->out.begin(), files->out.end(), '\0'));
    return 0;
  }
};

// A refused read-tree: a conflict when local paths collide with the update, else git's own failure
// (a lock held by the agent's git, a full disk) as an I/O error.
RpcError refusal(const std::string& what, std::vector<std::string> files, const std::string& git_reason) {
  if (files.empty()) return make_rpc_error(agent_error::kIoError, what + ": git read-tree failed: " + git_reason + "; nothing was changed");
  std::string message = what + ": the guest's own changes conflict with the update in " + std::to_string(files.size()) + " file(s): ";
  for (std::size_t i = 0; i < files.size() && i < 10; ++i) message += (i ? ", " : "") + files[i];
  if (files.size() > 10) message += ", ...";
  message += "; nothing was changed";
  if (files.size() > channel::kMaxConflictFiles) files.resize(channel::kMaxConflictFiles);
  return make_rpc_error(agent_error::kWorkspaceConflict, message, json{{"files", files}, {"git", git_reason}});
}

// What COMMIT has at each path that changed from BASE, from `git diff-tree -r -z --no-renames`
// (":<old mode> <new mode> <old id> <new id> <status>\0<path>\0" per path); a deleted path has
// mode 0.
struct TreeChange {
  std::uint32_t mode = 0;
  std::string id;  // 40 hex
};
std::map<std::string, TreeChange> tree_changes(const std::string& raw) {
  std::map<std::string, TreeChange> out;
  std::size_t at = 0;
  while (at < raw.size()) {
    std::size_t header_end = raw.find('\0', at);
    if (header_end == std::string::npos || raw[at] != ':') break;
    std::size_t path_end = raw.find('\0', header_end + 1);
    if (path_end == std::string::npos) break;
    std::istringstream header(raw.substr(at + 1, header_end - at - 1));
    std::string old_mode, new_mode, old_id, new_id;
    header >> old_mode >> new_mode >> old_id >> new_id;
    TreeChange change;
    change.mode = static_cast<std::uint32_t>(std::strtoul(new_mode.c_str(), nullptr, 8));
    change.id = new_id;
    out[raw.substr(header_end + 1, path_end - header_end - 1)] = change;
    at = path_end + 1;
  }
  return out;
}

// Whether the worktree already holds what COMMIT has at `path`: the same blob with the same mode,
// or nothing where COMMIT has nothing (the user applied the sandbox's own change on the host).
bool already_applied(int dir, const std::string& path, const std::map<std::string, TreeChange>& changes) {
  auto it = changes.find(path);
  if (it == changes.end()) return false;  // a folder or file in the way of a changed path
  struct stat st{};
  bool present = ::fstatat(dir, path.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode));
  if (it->second.mode == 0) return !present;
  if (!present) return false;
  BlobHasher hasher;
  std::string raw;
  std::uint32_t mode = 0;
  if (S_ISLNK(st.st_mode)) {
    char target[channel::kMaxPath];
    ssize_t n = ::readlinkat(dir, path.c_str(), target, sizeof target);
    if (n < 0) return false;
    hasher.begin(static_cast<std::uint64_t>(n));
    hasher.update(std::string_view(target, static_cast<std::size_t>(n)));
    raw = hasher.finish_raw();
    mode = channel::kModeSymlink;
  } else {
    auto hashed = hash_regular(dir, path, hasher, st);
    if (!hashed) return false;
    raw = *hashed;
    mode = (st.st_mode & S_IXUSR) ? channel::kModeExecutable : channel::kModeFile;
  }
  return mode == it->second.mode && channel::id_to_hex(raw) == it->second.id;
}

// The stage-0 entries of the workspace's index by path; nullopt when the index cannot be read here.
std::optional<std::map<std::string, IndexEntry>> index_by_path(const std::string& root) {
  if (has_shared_index(root)) return std::nullopt;
  auto data = read_regular_file(root + "/.git/index", 256u << 20, true);
  if (!data) return std::nullopt;
  auto entries = index_entries(*data);
  if (!entries) return std::nullopt;
  std::map<std::string, IndexEntry> out;
  for (auto& e : *entries) out.emplace(e.path, std::move(e));
  return out;
}

}  // namespace

std::vector<std::string> colliding_paths(const std::vector<std::string>& changed, const std::vector<std::string>& local) {
  std::set<std::string> changed_set(changed.begin(), changed.end()), folders;
  for (const auto& c : changed)
    for (std::size_t slash = c.find('/'); slash != std::string::npos; slash = c.find('/', slash + 1)) folders.insert(c.substr(0, slash));
  std::vector<std::string> out;
  for (const auto& p : local) {
    bool hit = changed_set.count(p) || folders.count(p);
    for (std::size_t slash = p.find('/'); !hit && slash != std::string::npos; slash = p.find('/', slash + 1)) hit = changed_set.count(p.substr(0, slash)) > 0;
    if (hit) out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Outcome checkout_workspace(const channel::WorkspaceCheckoutParams& p) {
  Steps git{p.path, "workspace.checkout: " + p.path, std::nullopt};
  struct stat st{};
  if (::stat((p.path + "/.git").c_str(), &st) != 0)
    return make_rpc_error(agent_error::kNotARepository, git.what + " is not a git workspace (no .git): import a pack first");
  std::string ref = "refs/heads/" + p.branch;
  // One git process answers what used to take four: both commits, HEAD and the branch (read-tree
  // moves no ref, so the branch can be read before it).
  std::vector<std::string> names = {p.commit + "^{commit}", p.base ? *p.base + "^{commit}" : p.commit + "^{commit}", "HEAD", ref};
  auto found = git.look_up(names);
  if (git.error) return *git.error;
  for (std::size_t i = 0; i < 2; ++i)
    if (found[i].empty())
      return make_rpc_error(agent_error::kNotFound, git.what + ": commit " + (i ? *p.base : p.commit) +
                                                        " is not in the workspace's object store; send a pack with it first");
  const std::string& head = found[2];
  const std::string& branch_at = found[3];

  channel::WorkspaceCheckoutResult result;
  result.commit = p.commit;
  result.branch = p.branch;
  if (!p.base) {
    if (!head.empty())
      return make_rpc_error(protocol::rpc_error::kInvalidParams, git.what + " already has commit " + head + " checked out; pass \"base\" to update it");
    // One process fills the index and worktree, sets the branch and points HEAD at it; like
    // read-tree it refuses to overwrite an untracked file, ignored ones included.
    auto checkout = git.run({"-c", "core.hooksPath=/dev/null", "checkout", "-q", "--no-overwrite-ignore", "--no-guess", "-B", p.branch, p.commit, "--"});
    if (git.error) return *git.error;
    if (!checkout->ok()) {
      auto untracked = git.paths({"ls-files", "-z", "--others"});
      auto incoming = git.paths({"ls-tree", "-r", "-z", "--name-only", p.commit});
      auto colliding = colliding_paths(incoming, untracked);
      return colliding.empty() ? make_rpc_error(agent_error::kIoError, git.what + ": git checkout failed: " + checkout->problem() + "; nothing was changed")
                               : refusal(git.what, std::move(colliding), checkout->problem());
    }
    result.branch_moved = true;
  } else {
    (void)git.run({"update-index", "-q", "--refresh"});  // stat-only differences are no edits
    auto read = git.run({"read-tree", "-m", "-u", *p.base, p.commit});
    if (git.error) return *git.error;
    if (!read->ok()) {
      auto diff = git.run({"diff-tree", "-r", "-z", "--no-renames", *p.base, p.commit});
      auto changes = tree_changes(diff && diff->ok() && !diff->out_truncated ? diff->out : std::string());
      std::vector<std::string> changed;
      for (const auto& [path, change] : changes) changed.push_back(path);
      auto local = git.paths({"diff-files", "-z", "--name-only"});
      auto staged = git.paths({"diff-index", "-z", "--cached", "--name-only", "--no-renames", *p.base});
      auto untracked = git.paths({"ls-files", "-z", "--others"});
      if (git.error) return *git.error;
      std::set<std::string> staged_set(staged.begin(), staged.end());
      local.insert(local.end(), staged.begin(), staged.end());
      local.insert(local.end(), untracked.begin(), untracked.end());
      auto colliding = colliding_paths(changed, local);
      // A path the guest already changed exactly as COMMIT does is no conflict. A staged one only
      // when the index holds COMMIT's version too (the agent committed or added that change), so
      // that taking the worktree's version into the index drops nothing the agent staged.
      std::optional<std::map<std::string, IndexEntry>> index_now;
      if (!staged_set.empty()) index_now = index_by_path(p.path);
      auto index_agrees = [&](const std::string& path) {
        if (!staged_set.count(path)) return true;
        if (!index_now) return false;
        auto change = changes.find(path);
        auto entry = index_now->find(path);
        if (change == changes.end()) return false;
        if (change->second.mode == 0) return entry == index_now->end();
        return entry != index_now->end() && entry->second.mode == change->second.mode && channel::id_to_hex(entry->second.raw_id) == change->second.id;
      };
      std::vector<std::string> applied, conflicts;
      int dir = ::open(p.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      for (const auto& path : colliding)
        (dir >= 0 && index_agrees(path) && already_applied(dir, path, changes) ? applied : conflicts).push_back(path);
      if (dir >= 0) ::close(dir);
      if (!conflicts.empty() || applied.empty()) return refusal(git.what, std::move(conflicts), read->problem());
      auto again = git.read_tree_taking(applied, *p.base, p.commit);
      if (git.error) return *git.error;
      if (!again->ok()) return refusal(git.what, std::move(colliding), again->problem());
    }
    if (branch_at == *p.base || branch_at.empty()) {
      std::vector<std::string> args = {"update-ref", "-m", "lockroom: sync", ref, p.commit};
      if (!branch_at.empty()) args.push_back(*p.base);
      if (!git.must(args, "moving the branch")) return *git.error;
      result.branch_moved = true;
    }
  }
  result.files = git.index_files();
  if (git.error) return *git.error;
  return channel::to_json(result);
}

}  // namespace lockroom::agent
