// changes/apply as a branch in the user's repository (see apply_branch.h).
#include "server/workspace/review/apply_branch.h"

#include <optional>
#include <set>

#include "server/workspace/review/object_copy.h"
#include "server/workspace/review/path_rules.h"
#include "server/workspace/review/review_git.h"

namespace lockroom::workspace::review {
namespace {

Error git_failure(ErrorCode code, const std::string& what, int rc) { return make_error(code, git_error_text(what, rc)); }

// The base tree with only the planned changes applied, written to the store.
Result<git_oid> selected_tree(git_repository* store, const git_oid& base_tree, const std::vector<PlannedChange>& planned) {
  git_tree* raw = nullptr;
  if (int rc = git_tree_lookup(&raw, store, &base_tree); rc < 0) {
    return git_failure(ErrorCode::kNotFound, "the base tree is not in the store", rc);
  }
  TreePtr base(raw);
  std::vector<git_tree_update> updates;
  for (const PlannedChange& change : planned) {
    if (change.base && (!change.target || change.change.old_path != change.change.path)) {
      git_tree_update remove{};
      remove.action = GIT_TREE_UPDATE_REMOVE;
      remove.path = change.change.old_path.c_str();
      updates.push_back(remove);
    }
    if (change.target) {
      git_tree_update upsert{};
      upsert.action = GIT_TREE_UPDATE_UPSERT;
      upsert.id = change.target->blob;
      upsert.filemode = static_cast<git_filemode_t>(change.target->mode);
      upsert.path = change.change.path.c_str();
      updates.push_back(upsert);
    }
  }
  git_oid out;
  if (int rc = git_tree_create_updated(&out, store, base.get(), updates.size(), updates.data()); rc < 0) {
    return git_failure(ErrorCode::kInternal, "cannot build the tree of the selected changes", rc);
  }
  return out;
}

// HEAD's entries that a commit built on the snapshot must keep: every path the snapshot kept out
// (withheld or skipped) that HEAD has, and every gitlink of HEAD (where the snapshot has the
// submodule's files). `changed` paths (the sandbox's) are left to the sandbox.
Result<std::vector<git_tree_update>> head_fixups(git_tree* head, const std::vector<std::string>& kept_out,
                                                 const std::set<std::string>& changed, std::vector<std::string>& paths) {
  std::vector<std::pair<std::string, const git_tree_entry*>> keep;
  std::vector<GitPtr<git_tree_entry, git_tree_entry_free>> owned;
  for (const std::string& path : kept_out) {
    if (changed.count(path)) continue;
    git_tree_entry* raw = nullptr;
    if (git_tree_entry_bypath(&raw, head, path.c_str()) != 0) continue;
    owned.emplace_back(raw);
    if (git_tree_entry_type(raw) == GIT_OBJECT_TREE) continue;  // a withheld folder: its files are listed one by one
    keep.emplace_back(path, raw);
  }
  struct Walk {
    std::vector<std::pair<std::string, git_oid>> gitlinks;
  } walk;
  if (int rc = git_tree_walk(head, GIT_TREEWALK_PRE, [](const char* root, const git_tree_entry* entry, void* payload) -> int {
        if (git_tree_entry_filemode(entry) != GIT_FILEMODE_COMMIT) return 0;
        static_cast<Walk*>(payload)->gitlinks.emplace_back(std::string(root) + git_tree_entry_name(entry), *git_tree_entry_id(entry));
        return 0;
      }, &walk);
      rc < 0)
    return git_failure(ErrorCode::kInternal, "cannot list HEAD's submodules", rc);
  paths.clear();
  std::vector<git_tree_update> updates;
  for (const auto& [path, entry] : keep) {
    paths.push_back(path);
    git_tree_update u{};
    u.action = GIT_TREE_UPDATE_UPSERT;
    u.id = *git_tree_entry_id(entry);
    u.filemode = git_tree_entry_filemode(entry);
    updates.push_back(u);
  }
  for (const auto& [path, id] : walk.gitlinks) {
    paths.push_back(path);
    git_tree_update u{};
    u.action = GIT_TREE_UPDATE_UPSERT;
    u.id = id;
    u.filemode = GIT_FILEMODE_COMMIT;
    updates.push_back(u);
  }
  for (std::size_t i = 0; i < updates.size(); ++i) updates[i].path = paths[i].c_str();
  return updates;
}

// `tree` with `updates` applied, written to `repo`.
Result<git_oid> updated_tree(git_repository* repo, const git_oid& tree, const std::vector<git_tree_update>& updates) {
  if (updates.empty()) return tree;
  git_tree* raw = nullptr;
  if (int rc = git_tree_lookup(&raw, repo, &tree); rc < 0) return git_failure(ErrorCode::kInternal, "a tree to complete is not in the store", rc);
  TreePtr owned(raw);
  // libgit2 does not replace a folder by a gitlink in one step: such folders go first.
  std::vector<git_tree_update> removals;
  for (const git_tree_update& u : updates) {
    git_tree_entry* found = nullptr;
    if (u.filemode != GIT_FILEMODE_COMMIT || git_tree_entry_bypath(&found, owned.get(), u.path) != 0) continue;
    if (git_tree_entry_type(found) == GIT_OBJECT_TREE) {
      git_tree_update remove{};
      remove.action = GIT_TREE_UPDATE_REMOVE;
      remove.path = u.path;
      removals.push_back(remove);
    }
    git_tree_entry_free(found);
  }
  git_oid start = tree;
  if (!removals.empty()) {
    if (int rc = git_tree_create_updated(&start, repo, owned.get(), removals.size(), removals.data()); rc < 0)
      return git_failure(ErrorCode::kInternal, "cannot take the submodules' files out of the branch's tree", rc);
    git_tree* raw_start = nullptr;
    if (int rc = git_tree_lookup(&raw_start, repo, &start); rc < 0) return git_failure(ErrorCode::kInternal, "cannot read back a tree", rc);
    owned.reset(raw_start);
  }
  git_oid out;
  if (int rc = git_tree_create_updated(&out, repo, owned.get(), updates.size(), updates.data()); rc < 0)
    return git_failure(ErrorCode::kInternal, "cannot put HEAD's kept-out files and submodules into the branch's tree", rc);
  return out;
}

// The submodule of `head` that holds `path` (a gitlink at the path or at a folder above it), if any.
std::optional<std::string> submodule_holding(git_tree* head, const std::string& path) {
  for (std::size_t end = path.find('/');; end = path.find('/', end + 1)) {
    std::string prefix = path.substr(0, end);
    git_tree_entry* raw = nullptr;
    if (git_tree_entry_bypath(&raw, head, prefix.c_str()) != 0) return std::nullopt;
    bool gitlink = git_tree_entry_filemode(raw) == GIT_FILEMODE_COMMIT;
    git_tree_entry_free(raw);
    if (gitlink) return prefix;
    if (end == std::string::npos) return std::nullopt;
  }
}

// Changes inside a submodule of HEAD stay out of the branch: there the snapshot holds the
// submodule's checked-out files, but this repository's commit can only hold the gitlink.
void refuse_inside_submodules(git_tree* head, ResolvedSelection& resolved) {
  std::vector<PlannedChange> kept;
  for (PlannedChange& change : resolved.changes) {
    auto holder = submodule_holding(head, change.change.path);
    if (!holder && change.change.old_path != change.change.path) holder = submodule_holding(head, change.change.old_path);
    if (!holder) {
      kept.push_back(std::move(change));
      continue;
    }
    resolved.refused.push_back({change.change.path, "it is inside the submodule " + printable(*holder) +
                                                        ", which a commit of this repository cannot change; apply it to the worktree"});
  }
  resolved.changes = std::move(kept);
}

Result<SignaturePtr> signature_for(git_repository* repo) {
  git_signature* raw = nullptr;
  if (git_signature_default(&raw, repo) == 0) return SignaturePtr(raw);
  if (int rc = git_signature_now(&raw, "lockroom", "lockroom@localhost"); rc < 0) {
    return git_failure(ErrorCode::kInternal, "cannot make a commit signature", rc);
  }
  return SignaturePtr(raw);
}

}  // namespace

Result<BranchOutcome> apply_branch(git_repository* store, const git_oid& base_tree, const git_oid& result_tree,
                                   const Selection& selection, const BranchRequest& request) {
  ensure_libgit2();
  BranchOutcome outcome;
  outcome.ref_name = "refs/heads/lockroom/" + request.name;
  int valid = 0;
  if (request.name.empty() || git_reference_name_is_valid(&valid, outcome.ref_name.c_str()) < 0 || !valid) {
    return make_error(ErrorCode::kInvalidInput, "'" + printable(request.name) + "' cannot name a git branch (lockroom/" +
                                                    printable(request.name) + ")");
  }

  git_repository* raw_repo = nullptr;
  if (int rc = git_repository_open_ext(&raw_repo, request.repo_path.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr); rc < 0) {
    return git_failure(ErrorCode::kNotFound, "cannot open the git repository " + request.repo_path, rc);
  }
  RepoPtr repo(raw_repo);
  git_reference* raw_ref = nullptr;
  if (git_reference_lookup(&raw_ref, repo.get(), outcome.ref_name.c_str()) == 0) {
    git_reference_free(raw_ref);
    if (!request.force) {
      return make_error(ErrorCode::kWrongState, "the branch lockroom/" + request.name +
                                                    " already exists; choose another name or ask to replace it");
    }
  }

  auto changes = Changes::compute(store, base_tree, result_tree);
  if (!changes) return changes.error();
  auto resolved = resolve_selection(*changes, selection);
  if (!resolved) return resolved.error();

  CommitPtr parent;
  if (!git_oid_is_zero(&request.head_at_snapshot)) {
    git_commit* raw_commit = nullptr;
    if (int rc = git_commit_lookup(&raw_commit, repo.get(), &request.head_at_snapshot); rc < 0) {
      return git_failure(ErrorCode::kNotFound, "the snapshot's HEAD commit " + oid_hex(request.head_at_snapshot) +
                                                   " is not in " + request.repo_path, rc);
    }
    parent.reset(raw_commit);
    git_tree* raw_head_tree = nullptr;
    if (int rc = git_commit_tree(&raw_head_tree, parent.get()); rc < 0)
      return git_failure(ErrorCode::kNotFound, "the tree of the snapshot's HEAD commit is not in " + request.repo_path, rc);
    TreePtr head_tree(raw_head_tree);
    refuse_inside_submodules(head_tree.get(), *resolved);
  }
  outcome.refused = resolved->refused;
  git_oid theirs = result_tree;
  if (!selection.everything || !resolved->refused.empty()) {
    auto tree = selected_tree(store, base_tree, resolved->changes);
    if (!tree) return tree.error();
    theirs = *tree;
  }

  git_oid final_tree = theirs;
  git_oid snapshot_tree = base_tree;
  bool needs_snapshot_commit = false;
  if (parent) {
    const git_oid* head_tree_id = git_commit_tree_id(parent.get());
    if (auto copied = copy_tree_objects(repo.get(), store, *head_tree_id); !copied) return copied.error();
    git_tree* raw_head = nullptr;
    if (int rc = git_tree_lookup(&raw_head, store, head_tree_id); rc < 0)
      return git_failure(ErrorCode::kInternal, "HEAD's tree did not reach lockroom's store", rc);
    TreePtr head_tree(raw_head);
    std::set<std::string> changed;
    for (const PlannedChange& c : resolved->changes) {
      changed.insert(c.change.path);
      changed.insert(c.change.old_path);
    }
    std::vector<std::string> paths;
    auto fixups = head_fixups(head_tree.get(), request.kept_out, changed, paths);
    if (!fixups) return fixups.error();
    auto snap = updated_tree(store, base_tree, *fixups);
    if (!snap) return snap.error();
    snapshot_tree = *snap;
    auto tip = updated_tree(store, theirs, *fixups);
    if (!tip) return tip.error();
    final_tree = *tip;
    needs_snapshot_commit = !oid_equal(snapshot_tree, *head_tree_id);
  }
  outcome.tree = final_tree;

  if (needs_snapshot_commit)
    if (auto copied = copy_tree_objects(store, repo.get(), snapshot_tree); !copied) return copied.error();
  if (auto copied = copy_tree_objects(store, repo.get(), final_tree); !copied) return copied.error();
  auto signature = signature_for(repo.get());
  if (!signature) return signature.error();
  auto commit = [&](const git_oid& tree_id, git_commit* on, const std::string& message) -> Result<git_oid> {
    git_tree* raw_tree = nullptr;
    if (int rc = git_tree_lookup(&raw_tree, repo.get(), &tree_id); rc < 0)
      return git_failure(ErrorCode::kInternal, "the branch's tree did not reach the repository", rc);
    TreePtr tree(raw_tree);
    const git_commit* parents[1] = {on};
    git_oid id;
    if (int rc = git_commit_create(&id, repo.get(), nullptr, signature->get(), signature->get(), nullptr, message.c_str(), tree.get(),
                                   on ? 1 : 0, parents);
        rc < 0)
      return git_failure(ErrorCode::kUnavailable, "cannot write the commit", rc);
    return id;
  };
  CommitPtr below = std::move(parent);
  if (needs_snapshot_commit) {
    auto id = commit(snapshot_tree, below.get(), request.snapshot_message);
    if (!id) return id.error();
    outcome.snapshot_commit = *id;
    git_commit* raw_commit = nullptr;
    if (int rc = git_commit_lookup(&raw_commit, repo.get(), &*id); rc < 0)
      return git_failure(ErrorCode::kInternal, "the snapshot's commit cannot be read back", rc);
    below.reset(raw_commit);
  }
  auto tip = commit(final_tree, below.get(), request.message);
  if (!tip) return tip.error();
  outcome.commit = *tip;
  git_reference* created = nullptr;
  if (int rc = git_reference_create(&created, repo.get(), outcome.ref_name.c_str(), &outcome.commit, request.force ? 1 : 0,
                                    "lockroom: changes from a sandbox");
      rc < 0) {
    return git_failure(rc == GIT_EEXISTS ? ErrorCode::kWrongState : ErrorCode::kUnavailable,
                       "cannot create the branch lockroom/" + request.name, rc);
  }
  git_reference_free(created);
  outcome.created = true;
  return outcome;
}

}  // namespace lockroom::workspace::review
