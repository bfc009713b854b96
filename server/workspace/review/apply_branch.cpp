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

// Paths with conflicts in a merge index.
Result<std::vector<std::string>> conflict_paths(git_index* index) {
  git_index_conflict_iterator* raw = nullptr;
  if (int rc = git_index_conflict_iterator_new(&raw, index); rc < 0) {
    return git_failure(ErrorCode::kInternal, "cannot list the merge conflicts", rc);
  }
  ConflictIteratorPtr iterator(raw);
  std::set<std::string> paths;
  const git_index_entry *ancestor = nullptr, *ours = nullptr, *theirs = nullptr;
  while (git_index_conflict_next(&ancestor, &ours, &theirs, iterator.get()) == 0) {
    for (const git_index_entry* entry : {ancestor, ours, theirs}) {
      if (entry) paths.insert(entry->path);
    }
  }
  return std::vector<std::string>(paths.begin(), paths.end());
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
  if (parent) {
    const git_oid* head_tree = git_commit_tree_id(parent.get());
    if (!oid_equal(*head_tree, base_tree)) {
      // The worktree differed from HEAD: carry only the sandbox's changes onto HEAD's tree.
      if (auto copied = copy_tree_objects(repo.get(), store, *head_tree); !copied) return copied.error();
      git_tree *raw_base = nullptr, *raw_head = nullptr, *raw_theirs = nullptr;
      git_tree_lookup(&raw_base, store, &base_tree);
      git_tree_lookup(&raw_head, store, head_tree);
      git_tree_lookup(&raw_theirs, store, &theirs);
      TreePtr ancestor_tree(raw_base), our_tree(raw_head), their_tree(raw_theirs);
      if (!ancestor_tree || !our_tree || !their_tree) {
        return make_error(ErrorCode::kInternal, "the trees to merge are not all in lockroom's store");
      }
      git_merge_options merge_options = GIT_MERGE_OPTIONS_INIT;
      git_index* raw_index = nullptr;
      if (int rc = git_merge_trees(&raw_index, store, ancestor_tree.get(), our_tree.get(), their_tree.get(), &merge_options);
          rc < 0) {
        return git_failure(ErrorCode::kInternal, "cannot merge the sandbox's changes onto HEAD", rc);
      }
      IndexPtr merged(raw_index);
      if (git_index_has_conflicts(merged.get())) {
        auto paths = conflict_paths(merged.get());
        if (!paths) return paths.error();
        outcome.conflicts = std::move(*paths);
        return outcome;
      }
      if (int rc = git_index_write_tree_to(&final_tree, merged.get(), store); rc < 0) {
        return git_failure(ErrorCode::kInternal, "cannot write the merged tree", rc);
      }
    }
  }
  outcome.tree = final_tree;

  if (auto copied = copy_tree_objects(store, repo.get(), final_tree); !copied) return copied.error();
  git_tree* raw_tree = nullptr;
  if (int rc = git_tree_lookup(&raw_tree, repo.get(), &final_tree); rc < 0) {
    return git_failure(ErrorCode::kInternal, "the branch's tree did not reach the repository", rc);
  }
  TreePtr tree(raw_tree);
  auto signature = signature_for(repo.get());
  if (!signature) return signature.error();
  const git_commit* parents[1] = {parent.get()};
  if (int rc = git_commit_create(&outcome.commit, repo.get(), nullptr, signature->get(), signature->get(), nullptr,
                                 request.message.c_str(), tree.get(), parent ? 1 : 0, parents);
      rc < 0) {
    return git_failure(ErrorCode::kUnavailable, "cannot write the commit", rc);
  }
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
