// The object writer: new objects reach the store as packs holding only what the store lacked,
// memory is flushed as it fills, large files are streamed to loose objects.
#include <catch2/catch.hpp>

#include "server/workspace/snapshot/object_writer.h"
#include "tests/unit/workspace_snapshot/snapshot_test_util.h"

using namespace snaptest;
using namespace lockroom::workspace::snapshot;

namespace {

std::vector<std::string> pack_files(const std::string& store) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(store + "/objects/pack")) {
    if (e.path().extension() == ".pack") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The object count in a packfile's header.
std::uint32_t objects_in(const std::string& pack_path) {
  const std::string bytes = read_file(pack_path);
  REQUIRE(bytes.size() >= 12);
  REQUIRE(bytes.compare(0, 4, "PACK") == 0);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data()) + 8;
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

// Whether a store opened afresh (without the writer's in-memory objects) has `id`.
bool store_has(const std::string& store, const git_oid& id) {
  git_repository* raw = nullptr;
  REQUIRE(git_repository_open_bare(&raw, store.c_str()) == 0);
  RepoPtr repo(raw);
  git_odb* odb = nullptr;
  REQUIRE(git_repository_odb(&odb, repo.get()) == 0);
  OdbPtr owned(odb);
  return git_odb_exists(odb, &id) != 0;
}

}  // namespace

TEST_CASE("the writer flushes collected blobs as packs of new objects only, and big files go loose") {
  TempDir ws, store;
  write_file(ws / "a", std::string(200, 'a'));
  write_file(ws / "b", std::string(200, 'b'));
  write_file(ws / "c", std::string(50, 'c'));
  write_file(ws / "copy-of-a", std::string(200, 'a'));
  write_file(ws / "big", std::string((1 << 20) + 5, 'z'));
  fs::create_symlink("a", ws / "link");

  auto repo = open_store(store.path());
  REQUIRE(repo.ok());
  auto writer = ObjectWriter::attach(repo->get(), store.path(), 100);
  REQUIRE(writer.ok());
  auto put = [&](const char* name, EntryKind kind = EntryKind::kFile) {
    auto stored = writer->store_entry(ws / name, kind, 1 << 30);
    if (!stored) FAIL(stored.error().message);
    return stored->id;
  };
  const git_oid a = put("a");  // 200 bytes >= 100: flushed at once
  CHECK(pack_files(store.path()).size() == 1);
  const git_oid b = put("b");
  CHECK(pack_files(store.path()).size() == 2);
  const git_oid c = put("c");  // 50 bytes: stays in memory
  const git_oid copy = put("copy-of-a");  // the store has it: nothing new
  const git_oid link = put("link", EntryKind::kSymlink);
  CHECK(git_oid_equal(&a, &copy));
  CHECK(pack_files(store.path()).size() == 2);
  CHECK_FALSE(store_has(store.path(), c));
  const git_oid big = put("big");
  CHECK(pack_files(store.path()).size() == 2);
  CHECK(store_has(store.path(), big));  // streamed straight to a loose object
  CHECK(fs::exists(store / ("objects/" + hex(big).substr(0, 2) + "/" + hex(big).substr(2))));

  REQUIRE(writer->flush().ok());
  std::vector<std::uint32_t> counts;
  for (const auto& pack : pack_files(store.path())) counts.push_back(objects_in(pack));
  std::sort(counts.begin(), counts.end());
  CHECK(counts == std::vector<std::uint32_t>{1, 1, 2});  // a; b; c and the link target
  for (const git_oid& id : {a, b, c, link, big}) CHECK(store_has(store.path(), id));

  REQUIRE(writer->flush().ok());  // nothing collected: no empty pack
  CHECK(pack_files(store.path()).size() == 3);
}

TEST_CASE("each snapshot adds one pack with only what changed") {
  TempDir ws, store;
  for (int i = 0; i < 30; ++i) write_file(ws / ("dir" + std::to_string(i % 3) + "/f" + std::to_string(i)), std::to_string(i));
  age_files(ws.path());
  auto first = snap(ws.path(), store.path());
  auto packs = pack_files(store.path());
  REQUIRE(packs.size() == 1);
  CHECK(objects_in(packs[0]) == 30 + 4 + 1);  // blobs, root and 3 directory trees, commit

  write_file(ws / "dir1/f1", "edited");
  auto second = snap(ws.path(), store.path());
  auto now = pack_files(store.path());
  REQUIRE(now.size() == 2);
  const std::string& added = now[0] == packs[0] ? now[1] : now[0];
  CHECK(objects_in(added) == 1 + 2 + 1);  // the blob, root and dir1 trees, commit

  auto third = snap(ws.path(), store.path());  // nothing new: no pack
  CHECK(third.commit_id == second.commit_id);
  CHECK(pack_files(store.path()).size() == 2);
  CHECK(first.commit_id != second.commit_id);
}
