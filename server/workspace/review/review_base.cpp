// The review's base tree and how it moves (see review_base.h).
#include "server/workspace/review/review_base.h"

#include "server/workspace/review/path_rules.h"
#include "server/workspace/review/review_git.h"

namespace lockroom::workspace::review {
namespace {

Result<TreePtr> tree_at(git_repository* store, const git_oid& id) {
  git_tree* raw = nullptr;
  if (int rc = git_tree_lookup(&raw, store, &id); rc < 0)
    return make_error(ErrorCode::kInternal, git_error_text("the review's base tree " + oid_hex(id) + " is not in lockroom's store", rc));
  return TreePtr(raw);
}

// The entry at `path` as {mode, id}, or nothing.
std::optional<TreeSide> entry_at(git_tree* tree, const std::string& path) {
  if (path.empty()) return std::nullopt;
  git_tree_entry* entry = nullptr;
  if (git_tree_entry_bypath(&entry, tree, path.c_str()) != 0) return std::nullopt;
  TreeSide side{static_cast<std::uint32_t>(git_tree_entry_filemode(entry)), *git_tree_entry_id(entry)};
  git_tree_entry_free(entry);
  return side;
}

bool same(const std::optional<TreeSide>& a, const std::optional<TreeSide>& b) {
  if (!a || !b) return !a && !b;
  return a->mode == b->mode && git_oid_equal(&a->blob, &b->blob);
}

}  // namespace

Result<MovedBase> update_base(git_repository* store, const git_oid& base_tree, const std::vector<BaseUpdate>& updates) {
  auto tree = tree_at(store, base_tree);
  if (!tree) return tree.error();
  std::vector<git_tree_update> raw;
  raw.reserve(updates.size());
  for (const BaseUpdate& u : updates) {
    if (u.path.empty()) continue;
    git_tree_update one{};
    one.path = u.path.c_str();
    if (u.side) {
      one.action = GIT_TREE_UPDATE_UPSERT;
      one.id = u.side->blob;
      one.filemode = static_cast<git_filemode_t>(u.side->mode);
    } else {
      if (!entry_at(tree->get(), u.path)) continue;
      one.action = GIT_TREE_UPDATE_REMOVE;
    }
    raw.push_back(one);
  }
  MovedBase out;
  if (raw.empty()) {
    out.tree = base_tree;
    return out;
  }
  if (int rc = git_tree_create_updated(&out.tree, store, tree->get(), raw.size(), raw.data()); rc < 0)
    return make_error(ErrorCode::kInternal, git_error_text("cannot move the review's base", rc));
  // What the new base holds along the updated paths: the root, each folder, the blob.
  auto moved = tree_at(store, out.tree);
  if (!moved) return moved.error();
  out.written.push_back(out.tree);
  for (const BaseUpdate& u : updates) {
    for (std::size_t slash = u.path.find('/'); slash != std::string::npos; slash = u.path.find('/', slash + 1))
      if (auto folder = entry_at(moved->get(), u.path.substr(0, slash))) out.written.push_back(folder->blob);
    if (u.side) out.written.push_back(u.side->blob);
  }
  return out;
}

std::vector<BaseUpdate> updates_after_apply(const std::vector<FileApplyResult>& applied) {
  std::vector<BaseUpdate> out;
  for (const FileApplyResult& f : applied) {
    if (!f.moves_base) continue;
    if (!f.old_path.empty() && f.old_path != f.path) out.push_back({f.old_path, std::nullopt});
    out.push_back({f.path, f.target});
  }
  return out;
}

Result<std::vector<BaseUpdate>> updates_back_to(git_repository* store, const git_oid& snapshot_tree, const std::set<std::string>& paths) {
  auto tree = tree_at(store, snapshot_tree);
  if (!tree) return tree.error();
  std::vector<BaseUpdate> out;
  for (const std::string& p : paths)
    if (!p.empty()) out.push_back({p, entry_at(tree->get(), p)});
  return out;
}

Result<std::set<std::string>> base_differs(git_repository* store, const git_oid& view_base, const git_oid& current_base,
                                           const std::vector<FileChange>& changes) {
  std::set<std::string> out;
  if (git_oid_equal(&view_base, &current_base)) return out;
  auto then = tree_at(store, view_base);
  if (!then) return then.error();
  auto now = tree_at(store, current_base);
  if (!now) return now.error();
  for (const FileChange& c : changes) {
    for (const std::string& p : {c.path, c.old_path}) {
      if (!same(entry_at(then->get(), p), entry_at(now->get(), p))) out.insert(c.path);
    }
  }
  return out;
}

}  // namespace lockroom::workspace::review
