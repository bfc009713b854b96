// Content-addressed transfer: the objects a guest lacks, packed as a standard packfile, and a
// second snapshot after a few edits that moves only what changed.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <set>

#include "server/workspace/snapshot/transfer.h"
#include "tests/unit/workspace_snapshot/snapshot_test_util.h"

using namespace snaptest;
using namespace lockroom::workspace::snapshot;

namespace {

RepoPtr open_bare(const std::string& dir) {
  git_repository* raw = nullptr;
  REQUIRE(git_repository_open_bare(&raw, dir.c_str()) == 0);
  return RepoPtr(raw);
}

git_oid oid(const std::string& text) {
  git_oid id;
  REQUIRE(git_oid_fromstr(&id, text.c_str()) == 0);
  return id;
}

std::set<std::string> hex_set(const std::vector<git_oid>& ids) {
  std::set<std::string> out;
  for (const auto& id : ids) out.insert(hex(id));
  return out;
}

// The id of the tree or blob at `path` in commit `commit` ("" for the root tree).
std::string id_at(git_repository* repo, const std::string& commit, const std::string& path) {
  git_commit* c = nullptr;
  const git_oid commit_id = oid(commit);
  REQUIRE(git_commit_lookup(&c, repo, &commit_id) == 0);
  CommitPtr owned(c);
  if (path.empty()) return hex(*git_commit_tree_id(c));
  git_tree* tree = nullptr;
  REQUIRE(git_commit_tree(&tree, c) == 0);
  TreePtr owned_tree(tree);
  git_tree_entry* e = nullptr;
  REQUIRE(git_tree_entry_bypath(&e, tree, path.c_str()) == 0);
  std::string out = hex(*git_tree_entry_id(e));
  git_tree_entry_free(e);
  return out;
}

// Feeds `pack` to libgit2's indexer in a fresh bare repository and lists the objects it holds.
std::set<std::string> objects_in_pack(const std::string& pack) {
  TempDir dir;
  git_repository* raw = nullptr;
  REQUIRE(git_repository_init(&raw, dir.path().c_str(), 1) == 0);
  RepoPtr repo(raw);
  git_indexer* indexer = nullptr;
  git_indexer_options opts = GIT_INDEXER_OPTIONS_INIT;
  REQUIRE(git_indexer_new(&indexer, (dir / "objects/pack").c_str(), 0, nullptr, &opts) == 0);
  git_indexer_progress stats{};
  REQUIRE(git_indexer_append(indexer, pack.data(), pack.size(), &stats) == 0);
  REQUIRE(git_indexer_commit(indexer, &stats) == 0);
  git_indexer_free(indexer);

  git_odb* odb = nullptr;
  REQUIRE(git_repository_odb(&odb, repo.get()) == 0);
  OdbPtr owned(odb);
  std::set<std::string> ids;
  REQUIRE(git_odb_foreach(
              odb,
              [](const git_oid* id, void* payload) {
                static_cast<std::set<std::string>*>(payload)->insert(hex(*id));
                return 0;
              },
              &ids) == 0);
  return ids;
}

std::string pack_of(git_repository* store, const std::vector<git_oid>& ids, PackInfo* info = nullptr) {
  std::string pack;
  auto written = write_pack(store, ids, [&](std::string_view bytes) -> lockroom::Result<void> {
    pack.append(bytes);
    return {};
  });
  if (!written) FAIL(written.error().message);
  CHECK(written->bytes == pack.size());
  CHECK(written->objects == ids.size());
  if (info) *info = *written;
  return pack;
}

}  // namespace

TEST_CASE("a first transfer sends the commit, every tree and every distinct blob, as a valid pack") {
  TempDir ws, store;
  write_file(ws / "a.txt", "same\n");
  write_file(ws / "dir/b.txt", "same\n");  // the same blob twice: sent once
  write_file(ws / "dir/sub/c.txt", "c\n");
  auto r = snap(ws.path(), store.path());
  auto repo = open_bare(store.path());

  auto ids = objects_to_send(repo.get(), oid(r.commit_id), {});
  REQUIRE(ids.ok());
  const std::set<std::string> expected = {r.commit_id,
                                          r.tree_id,
                                          id_at(repo.get(), r.commit_id, "dir"),
                                          id_at(repo.get(), r.commit_id, "dir/sub"),
                                          id_at(repo.get(), r.commit_id, "a.txt"),
                                          id_at(repo.get(), r.commit_id, "dir/sub/c.txt")};
  CHECK(ids->size() == expected.size());
  CHECK(hex_set(*ids) == expected);
  CHECK(hex(ids->front()) == r.commit_id);
  const std::string pack = pack_of(repo.get(), *ids);
  CHECK(objects_in_pack(pack) == expected);

  // The store was empty, so its one pack is exactly this set: sent as it is, not packed again.
  std::vector<std::string> store_packs;
  for (const auto& e : fs::directory_iterator(store / "objects/pack")) {
    if (e.path().extension() == ".pack") store_packs.push_back(read_file(e.path()));
  }
  REQUIRE(store_packs.size() == 1);
  CHECK(pack == store_packs[0]);
}

TEST_CASE("a second snapshot after 3 edits sends only 3 blobs, the changed trees and the commit") {
  TempDir ws, store;
  write_file(ws / "README", "readme\n");
  write_file(ws / "a/b/deep.txt", "deep\n");
  write_file(ws / "a/other.txt", "other\n");
  write_file(ws / "c/file.txt", "file\n");
  for (int i = 0; i < 20; ++i) write_file(ws / ("d/untouched" + std::to_string(i) + ".txt"), std::to_string(i));
  age_files(ws.path());

  auto first = snap(ws.path(), store.path());
  CHECK(first.files_read == 24);
  auto repo = open_bare(store.path());
  auto sent = objects_to_send(repo.get(), oid(first.commit_id), {});
  REQUIRE(sent.ok());
  OidSet guest_has(sent->begin(), sent->end());

  write_file(ws / "README", "readme, edited\n");
  write_file(ws / "a/b/deep.txt", "deep, edited\n");
  write_file(ws / "c/file.txt", "file, edited\n");
  for (const char* edited : {"README", "a/b/deep.txt", "c/file.txt"}) {
    age_file(ws / edited, 5);  // older than the racy window, so the third snapshot may trust them
  }
  auto second = snap(ws.path(), store.path());
  CHECK(second.files_read == 3);  // the rest came from the stat cache
  CHECK(second.commit_id != first.commit_id);

  auto delta = objects_to_send(repo.get(), oid(second.commit_id), guest_has);
  REQUIRE(delta.ok());
  const std::set<std::string> expected = {second.commit_id,
                                          second.tree_id,
                                          id_at(repo.get(), second.commit_id, "a"),
                                          id_at(repo.get(), second.commit_id, "a/b"),
                                          id_at(repo.get(), second.commit_id, "c"),
                                          id_at(repo.get(), second.commit_id, "README"),
                                          id_at(repo.get(), second.commit_id, "a/b/deep.txt"),
                                          id_at(repo.get(), second.commit_id, "c/file.txt")};
  CHECK(delta->size() == 8);
  CHECK(hex_set(*delta) == expected);
  PackInfo info;
  const std::string pack = pack_of(repo.get(), *delta, &info);
  CHECK(info.objects == 8);
  CHECK(objects_in_pack(pack) == expected);

  // Nothing changed: the same commit, nothing read, nothing to send.
  for (const auto& id : *delta) guest_has.insert(id);
  auto third = snap(ws.path(), store.path());
  CHECK(third.commit_id == second.commit_id);
  CHECK(third.files_read == 0);
  auto nothing = objects_to_send(repo.get(), oid(third.commit_id), guest_has);
  REQUIRE(nothing.ok());
  CHECK(nothing->empty());
}

TEST_CASE("the packfile is accepted by git index-pack --stdin, as the guest runs it") {
  if (std::system("git --version >/dev/null 2>&1") != 0) {
    WARN("git is not installed; skipped");
    return;
  }
  // Without a large file the store's own pack is sent; with one (streamed to a loose object) a
  // new pack is built. Both must index.
  for (bool with_big_file : {false, true}) {
    INFO("with a large file: " << with_big_file);
    TempDir ws, store, guest;
    write_file(ws / "x.c", "int x;\n");
    write_file(ws / "sub/y.c", "int y;\n");
    if (with_big_file) write_file(ws / "big.bin", std::string(3 << 20, 'z'));
    auto r = snap(ws.path(), store.path());
    auto repo = open_bare(store.path());
    auto ids = objects_to_send(repo.get(), oid(r.commit_id), {});
    REQUIRE(ids.ok());
    write_file(guest / "pack", pack_of(repo.get(), *ids));
    const std::string bare = guest / "repo.git";
    const std::string cmd = "git init -q --bare '" + bare + "' && git -C '" + bare + "' index-pack --stdin < '" +
                            (guest / "pack").string() + "' >/dev/null && git -C '" + bare + "' archive " + r.commit_id +
                            " >/dev/null";
    CHECK(std::system(cmd.c_str()) == 0);
  }
}

TEST_CASE("a sink error stops the pack and is returned as is") {
  TempDir ws, store;
  write_file(ws / "a.txt", "a\n");
  auto r = snap(ws.path(), store.path());
  auto repo = open_bare(store.path());
  auto ids = objects_to_send(repo.get(), oid(r.commit_id), {});
  REQUIRE(ids.ok());
  int calls = 0;
  auto written = write_pack(repo.get(), *ids, [&](std::string_view) -> lockroom::Result<void> {
    ++calls;
    return lockroom::make_error(lockroom::ErrorCode::kCancelled, "the guest went away");
  });
  REQUIRE_FALSE(written.ok());
  CHECK(calls == 1);
  CHECK(written.error().code == lockroom::ErrorCode::kCancelled);
  CHECK(written.error().message == "the guest went away");
}

TEST_CASE("the guest's list of objects is validated") {
  auto good = parse_oid_set({std::string(40, 'a'), std::string(40, 'B'), std::string(40, 'a')});
  REQUIRE(good.ok());
  CHECK(good->size() == 2);
  for (const std::string& bad : {std::string(39, 'a'), std::string(41, 'a'), std::string(39, 'a') + "g",
                                 std::string(39, 'a') + '\0'}) {
    auto r = parse_oid_set({bad});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == lockroom::ErrorCode::kInvalidInput);
  }
  auto too_many = parse_oid_set({std::string(40, 'a'), std::string(40, 'b')}, 1);
  REQUIRE_FALSE(too_many.ok());
  CHECK(too_many.error().code == lockroom::ErrorCode::kLimitExceeded);
}

TEST_CASE("an unknown commit is a clear error") {
  TempDir store;
  auto repo = open_store(store.path());
  REQUIRE(repo.ok());
  auto r = objects_to_send(repo->get(), oid(std::string(40, '1')), {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == lockroom::ErrorCode::kNotFound);
  CHECK(r.error().message.find(std::string(40, '1')) != std::string::npos);
}

TEST_CASE("a first transfer of a store with a large file: the store's pack as it is, a new pack only for the rest") {
  if (std::system("git --version >/dev/null 2>&1") != 0) {
    WARN("git is not installed; skipped");
    return;
  }
  TempDir ws, store, guest;
  for (int i = 0; i < 30; ++i) write_file(ws / ("src/f" + std::to_string(i) + ".c"), "int f" + std::to_string(i) + ";\n");
  write_file(ws / "big.bin", std::string(3 << 20, 'z'));  // streamed to a loose object, outside the pack
  auto r = snap(ws.path(), store.path());
  auto repo = open_bare(store.path());
  auto ids = objects_to_send(repo.get(), oid(r.commit_id), {});
  REQUIRE(ids.ok());

  auto plan = plan_packs(repo.get(), *ids);
  REQUIRE(plan.ok());
  REQUIRE(plan->store_packs.size() == 1);
  CHECK(plan->store_packs[0].objects == ids->size() - 1);
  REQUIRE(plan->rest.size() == 1);
  CHECK(hex(plan->rest[0]) == id_at(repo.get(), r.commit_id, "big.bin"));

  std::string store_pack;
  auto sent = send_store_pack(plan->store_packs[0], [&](std::string_view bytes) -> lockroom::Result<void> {
    store_pack.append(bytes);
    return {};
  });
  REQUIRE(sent.ok());
  CHECK(store_pack == read_file(plan->store_packs[0].path));
  CHECK(sent->bytes == plan->store_packs[0].bytes);
  const std::string rest_pack = pack_of(repo.get(), plan->rest);
  CHECK(objects_in_pack(rest_pack) == hex_set(plan->rest));

  // Both packs into one repository, as consecutive imports: the commit is complete.
  write_file(guest / "1.pack", store_pack);
  write_file(guest / "2.pack", rest_pack);
  const std::string bare = guest / "repo.git";
  const std::string cmd = "git init -q --bare '" + bare + "' && git -C '" + bare + "' index-pack --stdin --fix-thin < '" + (guest / "1.pack").string() +
                          "' >/dev/null && git -C '" + bare + "' index-pack --stdin --fix-thin < '" + (guest / "2.pack").string() +
                          "' >/dev/null && git -C '" + bare + "' fsck --no-progress --no-dangling " + r.commit_id + " && git -C '" + bare + "' archive " +
                          r.commit_id + " >/dev/null";
  CHECK(std::system(cmd.c_str()) == 0);

  // A sync: the guest has the first commit.
  write_file(ws / "src/f3.c", "int f3 = 3;\n");
  auto second = snap(ws.path(), store.path());
  auto delta = objects_to_send(repo.get(), oid(second.commit_id), OidSet(ids->begin(), ids->end()));
  REQUIRE(delta.ok());
  auto sync_plan = plan_packs(repo.get(), *delta);
  REQUIRE(sync_plan.ok());
  CHECK(delta->size() == 4);  // the edited file, src/, the root tree, the commit
  // The new snapshot's pack holds exactly these: sent as it is. The first pack holds objects the
  // guest has, so it is not sent again.
  REQUIRE(sync_plan->store_packs.size() == 1);
  CHECK(sync_plan->store_packs[0].objects == 4);
  CHECK(sync_plan->rest.empty());
}

// A first transfer of a tree the store keeps as a pack plus a loose large file: one new pack of
// everything (write_pack) against the store's pack as is plus a pack of the rest. Hidden; run
// with `lockroom-workspace_snapshot-tests "[.bench]" -s`.
TEST_CASE("first transfer: write_pack of everything vs plan_packs", "[.bench]") {
  TempDir ws, store;
  std::uint64_t seed = 1;
  for (int i = 0; i < 2000; ++i) {
    std::string text;
    for (int line = 0; line < 400; ++line) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      text += "line " + std::to_string(line) + " value " + std::to_string(seed >> 33) + "\n";
    }
    write_file(ws / ("d" + std::to_string(i % 40) + "/f" + std::to_string(i) + ".txt"), text);
  }
  write_file(ws / "big.bin", std::string(2 << 20, 'z'));
  auto r = snap(ws.path(), store.path());
  auto repo = open_bare(store.path());
  auto ids = objects_to_send(repo.get(), oid(r.commit_id), {});
  REQUIRE(ids.ok());
  auto count = [](std::uint64_t& bytes) {
    return [&bytes](std::string_view b) -> lockroom::Result<void> {
      bytes += b.size();
      return {};
    };
  };
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  std::uint64_t one_pack = 0;
  REQUIRE(write_pack(repo.get(), *ids, count(one_pack)).ok());
  auto t1 = clock::now();
  std::uint64_t planned = 0;
  auto plan = plan_packs(repo.get(), *ids);
  REQUIRE(plan.ok());
  for (const auto& pack : plan->store_packs) REQUIRE(send_store_pack(pack, count(planned)).ok());
  REQUIRE(write_pack(repo.get(), plan->rest, count(planned)).ok());
  auto t2 = clock::now();
  using ms = std::chrono::milliseconds;
  WARN(ids->size() << " objects: write_pack " << std::chrono::duration_cast<ms>(t1 - t0).count() << " ms, " << one_pack << " bytes; plan_packs ("
                   << plan->store_packs.size() << " store pack(s) + " << plan->rest.size() << " object(s)) "
                   << std::chrono::duration_cast<ms>(t2 - t1).count() << " ms, " << planned << " bytes");
}
