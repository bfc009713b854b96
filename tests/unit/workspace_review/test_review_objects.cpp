// ReviewObjects: a review's writes stay in memory up to a budget, past it they go to disk as before.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "server/workspace/review/review_objects.h"
#include "tests/unit/workspace_review/review_fixture.h"

using namespace lockroom::workspace;
using namespace lockroom::workspace::review;
using namespace lockroom::workspace::review::testing;

namespace {

// Loose objects under the store's objects/ folder.
std::size_t loose_objects(const std::string& store_dir) {
  std::size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(store_dir + "/objects"))
    if (e.is_regular_file() && e.path().parent_path().filename().string().size() == 2) n++;
  return n;
}

git_oid write_blob(git_repository* repo, const std::string& content) {
  git_oid id;
  check_git(git_blob_create_from_buffer(&id, repo, content.data(), content.size()), "blob");
  return id;
}

std::string read_blob(git_repository* repo, const git_oid& id) {
  git_blob* raw = nullptr;
  check_git(git_blob_lookup(&raw, repo, &id), "lookup");
  BlobPtr blob(raw);
  return std::string(static_cast<const char*>(git_blob_rawcontent(blob.get())), git_blob_rawsize(blob.get()));
}

}  // namespace

TEST_CASE("review objects: writes stay in memory and read back, trees included", "[review_objects]") {
  TempDir dir;
  RepoPtr store = init_repo(dir / "store.git", true);
  auto objects = ReviewObjects::attach(store.get(), 1 << 20, 1 << 16);
  REQUIRE(objects);

  git_oid tree = tree_of(store.get(), {{"a.txt", "alpha\n"}, {"src/b.c", "int b;\n"}});
  CHECK(loose_objects(dir / "store.git") == 0);
  CHECK(objects->count() == 4);  // two blobs, two trees
  git_tree* raw = nullptr;
  REQUIRE(git_tree_lookup(&raw, store.get(), &tree) == 0);
  TreePtr root(raw);
  CHECK(git_tree_entrycount(root.get()) == 2);
  CHECK(read_blob(store.get(), blob_id("alpha\n")) == "alpha\n");

  // Another handle on the same store does not see them: nothing reached the disk.
  git_repository* other_raw = nullptr;
  REQUIRE(git_repository_open_bare(&other_raw, (dir / "store.git").c_str()) == 0);
  RepoPtr other(other_raw);
  git_odb* odb_raw = nullptr;
  REQUIRE(git_repository_odb(&odb_raw, other.get()) == 0);
  OdbPtr other_odb(odb_raw);
  CHECK_FALSE(git_odb_exists(other_odb.get(), &tree));
}

TEST_CASE("review objects: past the budget or the per-object bound, objects are written loose", "[review_objects]") {
  TempDir dir;
  RepoPtr store = init_repo(dir / "store.git", true);
  auto objects = ReviewObjects::attach(store.get(), 100, 60);
  REQUIRE(objects);

  git_oid small = write_blob(store.get(), std::string(50, 's'));
  CHECK(objects->bytes() == 50);
  CHECK(loose_objects(dir / "store.git") == 0);

  git_oid over_object = write_blob(store.get(), std::string(70, 'o'));  // over 60 per object
  git_oid over_budget = write_blob(store.get(), std::string(55, 'b'));  // 50 + 55 > 100
  CHECK(objects->bytes() == 50);
  CHECK(loose_objects(dir / "store.git") == 2);
  CHECK(read_blob(store.get(), small) == std::string(50, 's'));
  CHECK(read_blob(store.get(), over_object) == std::string(70, 'o'));
  CHECK(read_blob(store.get(), over_budget) == std::string(55, 'b'));
}

TEST_CASE("review objects: clear forgets what memory held, not what is on disk", "[review_objects]") {
  TempDir dir;
  RepoPtr store = init_repo(dir / "store.git", true);
  auto objects = ReviewObjects::attach(store.get(), 100, 100);
  REQUIRE(objects);
  git_oid in_memory = write_blob(store.get(), "kept in memory\n");
  git_oid on_disk = write_blob(store.get(), std::string(150, 'd'));
  REQUIRE(objects->count() == 1);

  objects->clear();
  CHECK(objects->count() == 0);
  CHECK(objects->bytes() == 0);
  git_odb* raw = nullptr;
  REQUIRE(git_repository_odb(&raw, store.get()) == 0);
  OdbPtr odb(raw);
  CHECK_FALSE(git_odb_exists(odb.get(), &in_memory));
  CHECK(git_odb_exists(odb.get(), &on_disk));
  // Written again after a clear, it is held again.
  write_blob(store.get(), "kept in memory\n");
  CHECK(objects->count() == 1);
}

TEST_CASE("review objects: pinned objects survive clear until unpinned", "[review_objects]") {
  TempDir dir;
  RepoPtr store = init_repo(dir / "store.git", true);
  auto objects = ReviewObjects::attach(store.get(), 1000, 100);
  REQUIRE(objects);
  git_oid pinned = write_blob(store.get(), "the moved base\n");
  git_oid loose = write_blob(store.get(), "a review's blob\n");
  objects->pin(pinned);
  objects->clear();
  git_odb* raw = nullptr;
  REQUIRE(git_repository_odb(&raw, store.get()) == 0);
  OdbPtr odb(raw);
  CHECK(git_odb_exists(odb.get(), &pinned));
  CHECK_FALSE(git_odb_exists(odb.get(), &loose));
  CHECK(objects->count() == 1);
  CHECK(objects->bytes() == std::string("the moved base\n").size());
  objects->unpin_all();
  objects->clear();
  CHECK_FALSE(git_odb_exists(odb.get(), &pinned));
  CHECK(objects->count() == 0);
}

TEST_CASE("review objects: a blob whose id the caller computed is kept as is, within the budget", "[review_objects]") {
  TempDir dir;
  RepoPtr store = init_repo(dir / "store.git", true);
  auto objects = ReviewObjects::attach(store.get(), 64, 32);
  REQUIRE(objects);

  std::string small = "twelve bytes";
  git_oid small_id = blob_id(small);
  CHECK(objects->keep_verified_blob(small_id, small));
  CHECK(small.empty());  // moved into the store's memory
  CHECK(read_blob(store.get(), small_id) == "twelve bytes");
  CHECK(loose_objects(dir / "store.git") == 0);

  // Over the per-object bound: declined, the content left for the caller to store another way.
  std::string big(40, 'x');
  CHECK_FALSE(objects->keep_verified_blob(blob_id(big), big));
  CHECK(big == std::string(40, 'x'));
  CHECK(objects->count() == 1);
  CHECK(objects->bytes() == 12);
}
