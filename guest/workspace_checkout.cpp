// checkout_workspace; see workspace_checkout.h.
#include "guest/workspace_checkout.h"

#include <sys/stat.h>

#include <algorithm>
#include <set>

#include "guest/workspace_git.h"
#include "guest/workspace_manifest.h"

namespace lockroom::agent {

namespace channel = protocol::channel;
namespace agent_error = channel::agent_error;

namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
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
  std::string rev(const std::string& name) {
    auto r = run({"rev-parse", "-q", "--verify", name});
    return r && r->ok() ? trimmed(r->out) : std::string();
  }
  std::vector<std::string> paths(const std::vector<std::string>& args) {
    auto r = run(args);
    return r && r->ok() && !r->out_truncated ? split_z(r->out) : std::vector<std::string>{};
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
  for (const auto* id : {&p.commit, p.base ? &*p.base : nullptr}) {
    if (!id) continue;
    auto exists = git.run({"cat-file", "-e", *id + "^{commit}"});
    if (git.error) return *git.error;
    if (!exists->ok())
      return make_rpc_error(agent_error::kNotFound, git.what + ": commit " + *id + " is not in the workspace's object store; send a pack with it first");
  }
  std::string ref = "refs/heads/" + p.branch;
  std::string head = git.rev("HEAD");
  if (git.error) return *git.error;

  channel::WorkspaceCheckoutResult result;
  result.commit = p.commit;
  result.branch = p.branch;
  if (!p.base) {
    if (!head.empty())
      return make_rpc_error(protocol::rpc_error::kInvalidParams, git.what + " already has commit " + head + " checked out; pass \"base\" to update it");
    auto read = git.run({"read-tree", "-m", "-u", p.commit});
    if (git.error) return *git.error;
    if (!read->ok()) {
      auto untracked = git.paths({"ls-files", "-z", "--others"});
      auto incoming = git.paths({"ls-tree", "-r", "-z", "--name-only", p.commit});
      return refusal(git.what, colliding_paths(incoming, untracked), read->problem());
    }
    if (!git.must({"update-ref", "-m", "lockroom: snapshot", ref, p.commit}, "setting the branch") ||
        !git.must({"symbolic-ref", "HEAD", ref}, "pointing HEAD at the branch"))
      return *git.error;
    result.branch_moved = true;
  } else {
    (void)git.run({"update-index", "-q", "--refresh"});  // stat-only differences are no edits
    auto read = git.run({"read-tree", "-m", "-u", *p.base, p.commit});
    if (git.error) return *git.error;
    if (!read->ok()) {
      auto changed = git.paths({"diff-tree", "-r", "-z", "--name-only", "--no-renames", *p.base, p.commit});
      auto local = git.paths({"diff-files", "-z", "--name-only"});
      auto staged = git.paths({"diff-index", "-z", "--cached", "--name-only", "--no-renames", *p.base});
      auto untracked = git.paths({"ls-files", "-z", "--others"});
      local.insert(local.end(), staged.begin(), staged.end());
      local.insert(local.end(), untracked.begin(), untracked.end());
      return refusal(git.what, colliding_paths(changed, local), read->problem());
    }
    std::string branch_at = git.rev(ref);
    if (branch_at == *p.base || branch_at.empty()) {
      std::vector<std::string> args = {"update-ref", "-m", "lockroom: sync", ref, p.commit};
      if (!branch_at.empty()) args.push_back(*p.base);
      if (!git.must(args, "moving the branch")) return *git.error;
      result.branch_moved = true;
    }
  }
  auto files = git.run({"ls-files", "-z", "--cached"});
  if (files && files->ok() && !files->out_truncated) result.files = static_cast<std::int64_t>(std::count(files->out.begin(), files->out.end(), '\0'));
  if (git.error) return *git.error;
  return channel::to_json(result);
}

}  // namespace lockroom::agent
