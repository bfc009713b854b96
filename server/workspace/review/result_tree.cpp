// Rewriting the changed folders of a result tree (see result_tree.h).
#include "server/workspace/review/result_tree.h"

#include "server/workspace/review/path_rules.h"
#include "server/workspace/review/review_git.h"

namespace lockroom::workspace::review {

Result<git_oid> update_result_tree(git_repository* store, const git_oid& previous, const std::vector<PathChange>& changes) {
  ensure_libgit2();
  git_odb* raw_odb = nullptr;
  if (int rc = git_repository_odb(&raw_odb, store); rc < 0)
    return make_error(ErrorCode::kInternal, git_error_text("cannot open lockroom's object store", rc));
  OdbPtr odb(raw_odb);
  for (const PathChange& c : changes) {
    if (!c.now) continue;
    std::size_t size = 0;
    git_object_t type = GIT_OBJECT_INVALID;
    if (git_odb_read_header(&size, &type, odb.get(), &c.now->id) < 0)
      return make_error(ErrorCode::kWrongState, "the blob of " + printable(c.path) + " is still missing from the store; fetch it from the guest first");
    if (type != GIT_OBJECT_BLOB || size != c.now->size)
      return make_error(ErrorCode::kInvalidInput, "the stored blob differs in size from what the manifest claims for " + printable(c.path) + " (" +
                                                      std::to_string(size) + " bytes, claimed " + std::to_string(c.now->size) + ")");
  }
  git_tree* raw_tree = nullptr;
  if (int rc = git_tree_lookup(&raw_tree, store, &previous); rc < 0)
    return make_error(ErrorCode::kNotFound, git_error_text("the previous result tree " + oid_hex(previous) + " is not in the store", rc));
  TreePtr tree(raw_tree);
  // Removals, then additions, as two updates: the updater sorts its list by path, so a path that
  // turns from a folder into a file (or back) would otherwise be written before it is cleared.
  std::vector<git_tree_update> removals, upserts;
  for (const PathChange& c : changes) {
    git_tree_update u{};
    u.path = c.path.c_str();
    if (c.now) {
      u.action = GIT_TREE_UPDATE_UPSERT;
      u.id = c.now->id;
      u.filemode = static_cast<git_filemode_t>(c.now->mode);
      upserts.push_back(u);
    } else {
      u.action = GIT_TREE_UPDATE_REMOVE;
      removals.push_back(u);
    }
  }
  git_oid out = previous;
  for (auto* updates : {&removals, &upserts}) {
    if (updates->empty()) continue;
    if (int rc = git_tree_create_updated(&out, store, tree.get(), updates->size(), updates->data()); rc < 0)
      return make_error(ErrorCode::kInternal, git_error_text("cannot update the result tree", rc));
    if (updates == &removals && !upserts.empty()) {
      git_tree* next = nullptr;
      if (int rc = git_tree_lookup(&next, store, &out); rc < 0)
        return make_error(ErrorCode::kInternal, git_error_text("cannot read back the updated result tree", rc));
      tree.reset(next);
    }
  }
  return out;
}

}  // namespace lockroom::workspace::review
