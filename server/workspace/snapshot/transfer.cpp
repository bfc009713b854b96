// Which objects a guest lacks, and the packfile that carries them (see transfer.h).
#include "server/workspace/snapshot/transfer.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
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

// The object ids a pack index (version 2) lists, in its order (sorted); nullopt when it cannot be
// read or is not version 2.
std::optional<std::vector<git_oid>> index_ids(const std::filesystem::path& idx_path) {
  std::ifstream in(idx_path, std::ios::binary);
  unsigned char header[8 + 256 * 4];
  if (!in.read(reinterpret_cast<char*>(header), sizeof header)) return std::nullopt;
  static constexpr unsigned char kMagicV2[8] = {0xff, 't', 'O', 'c', 0, 0, 0, 2};
  if (std::memcmp(header, kMagicV2, sizeof kMagicV2) != 0) return std::nullopt;
  const unsigned char* last = header + 8 + 255 * 4;
  const std::uint64_t count = (std::uint64_t{last[0]} << 24) | (std::uint64_t{last[1]} << 16) |
                              (std::uint64_t{last[2]} << 8) | std::uint64_t{last[3]};
  std::error_code ec;
  const auto file_size = std::filesystem::file_size(idx_path, ec);
  if (ec || count > file_size / GIT_OID_RAWSZ) return std::nullopt;  // a count the file cannot hold
  std::vector<git_oid> ids(count);
  for (auto& id : ids)
    if (!in.read(reinterpret_cast<char*>(id.id), GIT_OID_RAWSZ)) return std::nullopt;
  return ids;
}

// Whether a pack index lists exactly `sorted_ids`.
bool index_lists_exactly(const std::filesystem::path& idx_path, const std::vector<git_oid>& sorted_ids) {
  auto listed = index_ids(idx_path);
  return listed && std::equal(listed->begin(), listed->end(), sorted_ids.begin(), sorted_ids.end(),
                              [](const git_oid& a, const git_oid& b) { return git_oid_equal(&a, &b); });
}

// A packfile of the store that holds exactly `ids`, if there is one: after a snapshot into an
// empty store, the store's new pack is what a guest without objects needs, already compressed.
std::optional<std::filesystem::path> existing_pack_of(git_repository* store, std::vector<git_oid> ids) {
  std::sort(ids.begin(), ids.end(), [](const git_oid& a, const git_oid& b) { return git_oid_cmp(&a, &b) < 0; });
  ids.erase(std::unique(ids.begin(), ids.end(), [](const git_oid& a, const git_oid& b) { return git_oid_equal(&a, &b); }),
            ids.end());
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::path(git_repository_path(store)) / "objects" / "pack";
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".idx") continue;
    auto pack = entry.path();
    pack.replace_extension(".pack");
    if (std::filesystem::is_regular_file(pack, ec) && index_lists_exactly(entry.path(), ids)) return pack;
  }
  return std::nullopt;
}

Result<PackInfo> stream_file(const std::filesystem::path& path, std::uint64_t objects, const PackSink& sink) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kUnavailable, "cannot read the snapshot pack " + path.string());
  PackInfo info;
  info.objects = objects;
  std::vector<char> chunk(64 * 1024);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const auto n = static_cast<std::size_t>(in.gcount());
    if (n == 0) break;
    if (auto r = sink(std::string_view(chunk.data(), n)); !r) return r.error();
    info.bytes += n;
  }
  if (in.bad()) return make_error(ErrorCode::kUnavailable, "cannot read the snapshot pack " + path.string());
  return info;
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
  if (!ids.empty()) {
    if (auto existing = existing_pack_of(store, ids)) {
      return stream_file(*existing, OidSet(ids.begin(), ids.end()).size(), sink);
    }
  }
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

Result<PackPlan> plan_packs(git_repository* store, const std::vector<git_oid>& ids) {
  ensure_libgit2();
  PackPlan plan;
  OidSet wanted(ids.begin(), ids.end()), covered;
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::path(git_repository_path(store)) / "objects" / "pack";
  std::vector<std::filesystem::path> indexes;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.path().extension() == ".idx") indexes.push_back(entry.path());
  std::sort(indexes.begin(), indexes.end());  // the same plan for the same store
  for (const auto& idx : indexes) {
    auto pack = idx;
    pack.replace_extension(".pack");
    if (!std::filesystem::is_regular_file(pack, ec)) continue;
    auto listed = index_ids(idx);
    if (!listed || listed->empty()) continue;
    bool whole = std::all_of(listed->begin(), listed->end(), [&](const git_oid& id) { return wanted.count(id) && !covered.count(id); });
    if (!whole) continue;
    const auto bytes = std::filesystem::file_size(pack, ec);
    if (ec) continue;
    covered.insert(listed->begin(), listed->end());
    plan.store_packs.push_back(StorePack{pack, listed->size(), bytes});
  }
  OidSet rest_seen;
  for (const auto& id : ids)
    if (!covered.count(id) && rest_seen.insert(id).second) plan.rest.push_back(id);
  return plan;
}

Result<PackInfo> send_store_pack(const StorePack& pack, const PackSink& sink) { return stream_file(pack.path, pack.objects, sink); }

}  // namespace lockroom::workspace::snapshot
