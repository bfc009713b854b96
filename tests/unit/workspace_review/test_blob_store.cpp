// Blob intake into lockroom's store and building the result tree from a manifest.
#include <catch2/catch.hpp>

#include "server/workspace/review/blob_store.h"
#include "tests/unit/workspace_review/review_fixture.h"

using namespace lockroom::workspace::review;
using namespace lockroom::workspace;
using namespace lockroom::workspace::review::testing;
using lockroom::ErrorCode;

namespace {

Files sample_files() {
  return {{"README.md", "# hello\n"},
          {"src/main.c", "int main(void) { return 0; }\n"},
          {"src/run.sh", "#!/bin/sh\necho hi\n", kModeExecutable},
          {"docs/a b/é.txt", "accents\n"},
          {"link", "src/main.c", kModeSymlink},
          {"same-content.txt", "# hello\n"}};
}

}  // namespace

TEST_CASE("manifest → missing blobs → store → result tree equals git's own tree of the files", "[blob_store]") {
  TempDir dir;
  auto store = init_repo(dir / "store.git", true);
  Files files = sample_files();
  auto manifest = validate_manifest(manifest_entries(files));
  REQUIRE(manifest.ok());

  // The store already has README.md's blob (as if the snapshot had it).
  git_oid readme;
  REQUIRE(git_blob_create_from_buffer(&readme, store.get(), files[0].content.data(), files[0].content.size()) == 0);

  auto missing = missing_blobs(store.get(), *manifest);
  REQUIRE(missing.ok());
  CHECK(missing->size() == 4);  // 6 files, one shares README's content, README is present
  for (const git_oid& id : *missing) CHECK_FALSE(oid_equal(id, readme));

  auto early = build_result_tree(store.get(), *manifest);
  REQUIRE_FALSE(early.ok());
  CHECK(early.error().code == ErrorCode::kWrongState);
  CHECK_THAT(early.error().message, Catch::Contains("4 blobs are still missing") && Catch::Contains("src/main.c"));

  for (const FileSpec& f : files) REQUIRE(store_blob(store.get(), blob_id(f.content), f.content, f.path).ok());
  auto none = missing_blobs(store.get(), *manifest);
  REQUIRE(none.ok());
  CHECK(none->empty());

  auto tree = build_result_tree(store.get(), *manifest);
  REQUIRE(tree.ok());
  TempDir other;
  auto reference = init_repo(other / "ref.git", true);
  git_oid expected = tree_of(reference.get(), files);
  CHECK(oid_hex(*tree) == oid_hex(expected));
}

TEST_CASE("store_blob refuses content that does not hash to the claimed id", "[blob_store]") {
  TempDir dir;
  auto store = init_repo(dir / "store.git", true);
  git_oid claimed = blob_id("the real content\n");
  auto stored = store_blob(store.get(), claimed, "something else\n", "src/evil.c");
  REQUIRE_FALSE(stored.ok());
  CHECK(stored.error().code == ErrorCode::kInvalidInput);
  CHECK_THAT(stored.error().message, Catch::Contains("blob for src/evil.c does not match its id"));
  git_odb* raw = nullptr;
  REQUIRE(git_repository_odb(&raw, store.get()) == 0);
  OdbPtr odb(raw);
  git_oid other = blob_id("something else\n");
  CHECK_FALSE(git_odb_exists(odb.get(), &claimed));
  CHECK_FALSE(git_odb_exists(odb.get(), &other));
}

TEST_CASE("BlobWriter takes chunks, checks the hash at the end and bounds the size", "[blob_store]") {
  TempDir dir;
  auto store = init_repo(dir / "store.git", true);
  std::string content(100'000, 'x');
  content += "tail\n";

  BlobWriter writer(store.get(), blob_id(content), content.size(), "big.txt");
  for (std::size_t at = 0; at < content.size(); at += 4096) REQUIRE(writer.write(std::string_view(content).substr(at, 4096)).ok());
  REQUIRE(writer.finish().ok());
  Manifest m;
  m.files.push_back({"big.txt", kModeFile, blob_id(content), content.size()});
  CHECK(missing_blobs(store.get(), m)->empty());

  BlobWriter liar(store.get(), blob_id("abc"), 3, "liar.txt");
  REQUIRE(liar.write("ab").ok());
  auto overflow = liar.write("cd");
  REQUIRE_FALSE(overflow.ok());
  CHECK_THAT(overflow.error().message, Catch::Contains("more than the declared 3 bytes for liar.txt"));

  BlobWriter wrong(store.get(), blob_id("abc"), 3, "wrong.txt");
  REQUIRE(wrong.write("abd").ok());
  auto finished = wrong.finish();
  REQUIRE_FALSE(finished.ok());
  CHECK_THAT(finished.error().message, Catch::Contains("blob for wrong.txt does not match its id"));

  BlobWriter short_one(store.get(), blob_id("abc"), 3, "short.txt");
  REQUIRE(short_one.write("ab").ok());
  CHECK_THAT(short_one.finish().error().message, Catch::Contains("sent 2 of the declared 3 bytes"));

  BlobWriter huge(store.get(), blob_id("x"), std::uint64_t(1) << 40, "huge.bin");
  auto refused = huge.write("x");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == ErrorCode::kLimitExceeded);
}

TEST_CASE("build_result_tree refuses a stored blob whose size differs from the manifest's claim", "[blob_store]") {
  TempDir dir;
  auto store = init_repo(dir / "store.git", true);
  std::string content = "four";
  REQUIRE(store_blob(store.get(), blob_id(content), content, "f").ok());
  Manifest m;
  m.files.push_back({"f", kModeFile, blob_id(content), 3});
  auto tree = build_result_tree(store.get(), m);
  REQUIRE_FALSE(tree.ok());
  CHECK_THAT(tree.error().message, Catch::Contains("f (4 bytes, claimed 3)"));
}
