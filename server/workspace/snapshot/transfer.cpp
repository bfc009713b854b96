// Which objects a guest lacks, and the packfile that carries them (see transfer.h).
#include "server/workspace/snapshot/transfer.h"

#include <deque>
#include <optional>

#include "server/workspace/git_util.h"

namespace lockroom::workspace::snapshot {
namespace {

using PackBuilderPtr = GitPtr<git_packbuilder, git_packbuilder_free>;

std::string hex(const git_oid& id) {
  char text[GIT_OID_HEXSZ + 1];
  git_oid_tostr(text, sizeof text, &id);
  return text;
}

struct PackWriteState {
  const PackSink* sink = nullptr;
  PackInfo info;
  std::optional<Error> sink_error;
};

int forward_pack_bytes(void* buf, size_t size, void* payload) {
  auto* state = static_cast<PackWriteState*>(payload);
  auto r = (*state->sink)(std::string_view(static_cast<const char*>(buf), size));
  if (!r) {
    state->sink_error = r.error();
    return GIT_EUSER;
  }
  state->info.bytes += size;
  return 0;
}

}  // namespace

Result<OidSet> parse_oid_set(const std::vector<std::string>& hex_ids, std::size_t max_ids) {
  if (hex_ids.size() > max_ids) {
    return make_error(ErrorCode::kLimitExceeded, "the guest listed " + std::to_string(hex_ids.size()) +
                                                     " objects, more than the limit of " + std::to_string(max_ids));
  }
  OidSet out;
  for (const auto& text : hex_ids) {
    bool valid = text.size() == GIT_OID_HEXSZ;
    for (char c : text) valid = valid && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'));
    git_oid id;
    if (!valid || git_oid_fromstrn(&id, text.data(), text.size()) < 0) {
      return make_error(ErrorCode::kInvalidInput, "invalid object id \"" + text.substr(0, 64) + "\": expected 40 hex digits");
    }
    out.insert(id);
  }
  return out;
}

Result<std::vector<git_oid>> objects_to_send(git_repository* store, const git_oid& commit_id, const OidSet& guest_has) {
  ensure_libgit2();
  git_commit* raw_commit = nullptr;
  if (int rc = git_commit_lookup(&raw_commit, store, &commit_id); rc < 0) {
    return make_error(ErrorCode::kNotFound, git_error_text("snapshot commit " + hex(commit_id) + " is not in the store", rc));
  }
  CommitPtr commit(raw_commit);

  std::vector<git_oid> out;
  OidSet seen;
  auto want = [&](const git_oid& id) { return !guest_has.count(id) && seen.insert(id).second; };
  if (want(commit_id)) out.push_back(commit_id);

  std::deque<git_oid> trees;
  if (want(*git_commit_tree_id(commit.get()))) {
    out.push_back(*git_commit_tree_id(commit.get()));
    trees.push_back(*git_commit_tree_id(commit.get()));
  }
  while (!trees.empty()) {
    git_tree* raw_tree = nullptr;
    if (int rc = git_tree_lookup(&raw_tree, store, &trees.front()); rc < 0) {
      return make_error(ErrorCode::kInternal, git_error_text("cannot read tree " + hex(trees.front()), rc));
    }
    TreePtr tree(raw_tree);
    trees.pop_front();
    for (std::size_t i = 0, n = git_tree_entrycount(tree.get()); i < n; ++i) {
      const git_tree_entry* e = git_tree_entry_byindex(tree.get(), i);
      const git_object_t type = git_tree_entry_type(e);
      if (type != GIT_OBJECT_TREE && type != GIT_OBJECT_BLOB) continue;  // gitlinks: never in a snapshot
      const git_oid* id = git_tree_entry_id(e);
      if (!want(*id)) continue;
      out.push_back(*id);
      if (type == GIT_OBJECT_TREE) trees.push_back(*id);
    }
  }
  return out;
}

Result<PackInfo> write_pack(git_repository* store, const std::vector<git_oid>& ids, const PackSink& sink) {
  ensure_libgit2();
  git_packbuilder* raw = nullptr;
  if (int rc = git_packbuilder_new(&raw, store); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot start a pack", rc));
  }
  PackBuilderPtr pb(raw);
  git_packbuilder_set_threads(pb.get(), 1);
  for (const auto& id : ids) {
    if (int rc = git_packbuilder_insert(pb.get(), &id, nullptr); rc < 0) {
      return make_error(ErrorCode::kNotFound, git_error_text("cannot pack object " + hex(id), rc));
    }
  }
  PackWriteState state;
  state.sink = &sink;
  state.info.objects = git_packbuilder_object_count(pb.get());
  if (int rc = git_packbuilder_foreach(pb.get(), forward_pack_bytes, &state); rc < 0) {
    if (state.sink_error) return *state.sink_error;
    return make_error(ErrorCode::kInternal, git_error_text("cannot write the pack", rc));
  }
  return state.info;
}

}  // namespace lockroom::workspace::snapshot
