// Partial manifests patched onto the host's view, and the result tree rewritten only where they
// changed it: checked against a full manifest and a tree built from scratch.
#include <catch2/catch.hpp>

#include <algorithm>

#include "server/workspace/review/blob_store.h"
#include "server/workspace/review/manifest_patch.h"
#include "server/workspace/review/result_tree.h"
#include "tests/unit/workspace_review/review_fixture.h"

using namespace lockroom::workspace;
using namespace lockroom::workspace::review;
using namespace lockroom::workspace::review::testing;
using lockroom::ErrorCode;

namespace {

Manifest full(const Files& files) {
  auto m = validate_manifest(manifest_entries(files));
  REQUIRE(m.ok());
  REQUIRE(m->refused.empty());
  return std::move(*m);
}

ManifestEntry removal(const std::string& path) { return {path, kModeRemoved, std::string(40, '0'), 0}; }

std::vector<std::string> paths_of(const Manifest& m) {
  std::vector<std::string> out;
  for (const auto& f : m.files) out.push_back(f.path);
  return out;
}

bool same_view(const Manifest& a, const Manifest& b) {
  if (a.files.size() != b.files.size() || a.total_bytes != b.total_bytes) return false;
  for (std::size_t i = 0; i < a.files.size(); ++i)
    if (a.files[i].path != b.files[i].path || a.files[i].mode != b.files[i].mode || !oid_equal(a.files[i].id, b.files[i].id) ||
        a.files[i].size != b.files[i].size)
      return false;
  return true;
}

const Files kBase = {
    {"README", "readme\n"}, {"src/a.c", "int a;\n"}, {"src/b.c", "int b;\n"}, {"src/deep/x.h", "x\n"}, {"tools/run", "#!/bin/sh\n", kModeExecutable},
};

}  // namespace

TEST_CASE("a partial manifest patched onto the view equals the full manifest of the new tree", "[manifest_patch]") {
  Files now = with(kBase, {{"src/a.c", "int a = 1;\n"}, {"src/deep/x.h", "", 0}, {"src/new.c", "new\n"}, {"tools/run", "#!/bin/sh\n"}});
  std::vector<ManifestEntry> changes = manifest_entries({{"src/a.c", "int a = 1;\n"}, {"src/new.c", "new\n"}, {"tools/run", "#!/bin/sh\n"}});
  changes.push_back(removal("src/deep/x.h"));
  std::sort(changes.begin(), changes.end(), [](const auto& a, const auto& b) { return a.path < b.path; });

  auto patched = apply_partial_manifest(full(kBase), changes);
  REQUIRE(patched.ok());
  CHECK(patched->refused.empty());
  CHECK(same_view(*patched, full(now)));

  auto diff = manifest_changes(full(kBase), *patched);
  std::vector<std::string> changed;
  for (const auto& c : diff) changed.push_back(c.path + (c.now ? "" : " (gone)"));
  CHECK(changed == std::vector<std::string>{"src/a.c", "src/deep/x.h (gone)", "src/new.c", "tools/run"});
}

TEST_CASE("a hostile partial manifest: bad paths, .git, unknown removals and file-folder clashes are refused, the rest applied", "[manifest_patch]") {
  std::vector<ManifestEntry> changes = manifest_entries({{"../escape", "x"}, {".git/hooks/pre-commit", "x"}, {"README/inner", "x"}, {"src", "file now"}, {"tools/ok.sh", "ok\n"}});
  changes.push_back(removal("never/listed"));
  std::sort(changes.begin(), changes.end(), [](const auto& a, const auto& b) { return a.path < b.path; });

  auto patched = apply_partial_manifest(full(kBase), changes);
  REQUIRE(patched.ok());
  std::vector<std::string> refused;
  for (const auto& r : patched->refused) refused.push_back(r.path);
  std::sort(refused.begin(), refused.end());
  CHECK(refused == std::vector<std::string>{"../escape", ".git/hooks/pre-commit", "README/inner", "never/listed", "src"});
  // Nothing outside the workspace or in .git; no path is both a file and a folder; the good
  // record is in.
  CHECK(paths_of(*patched) == std::vector<std::string>{"README", "src/a.c", "src/b.c", "src/deep/x.h", "tools/ok.sh", "tools/run"});
}

TEST_CASE("a partial manifest out of order, repeated, or over the bounds fails as a whole", "[manifest_patch]") {
  auto repeated = manifest_entries({{"src/a.c", "1"}, {"src/a.c", "2"}});
  CHECK(apply_partial_manifest(full(kBase), repeated).error().code == ErrorCode::kInvalidInput);
  auto unsorted = manifest_entries({{"src/b.c", "1"}, {"src/a.c", "2"}});
  CHECK(apply_partial_manifest(full(kBase), unsorted).error().code == ErrorCode::kInvalidInput);

  ManifestLimits limits;
  limits.max_entries = 6;
  auto two_new = manifest_entries({{"n1", "1"}, {"n2", "2"}});
  auto over = apply_partial_manifest(full(kBase), two_new, limits);  // 5 + 2 > 6
  REQUIRE_FALSE(over.ok());
  CHECK(over.error().code == ErrorCode::kLimitExceeded);
  CHECK_THAT(over.error().message, Catch::Contains("more than 6 entries"));

  limits = {};
  limits.max_total_bytes = 40;
  auto big = manifest_entries({{"n1", std::string(30, 'x')}});
  auto too_big = apply_partial_manifest(full(kBase), big, limits);
  REQUIRE_FALSE(too_big.ok());
  CHECK(too_big.error().code == ErrorCode::kLimitExceeded);
}

TEST_CASE("the result tree updated on the changed paths equals one built from scratch", "[manifest_patch]") {
  TempDir dir;
  RepoPtr store = init_repo(dir / "store.git", true);
  git_oid before_tree = tree_of(store.get(), kBase);

  auto check = [&](const Files& now_files) {
    tree_of(store.get(), now_files);  // puts the blobs in
    Manifest before = full(kBase), now = full(now_files);
    auto updated = update_result_tree(store.get(), before_tree, manifest_changes(before, now));
    REQUIRE(updated.ok());
    auto rebuilt = build_result_tree(store.get(), now);
    REQUIRE(rebuilt.ok());
    CHECK(oid_hex(*updated) == oid_hex(*rebuilt));
  };
  SECTION("a file edited, one added in a new folder, one made executable") {
    check(with(kBase, {{"src/a.c", "changed\n"}, {"lib/new/n.c", "n\n"}, {"README", "readme\n", kModeExecutable}}));
  }
  SECTION("a folder's last file deleted: the folder goes too") { check(with(kBase, {{"src/deep/x.h", "", 0}})); }
  SECTION("a folder replaced by a file of its name") {
    check(with(kBase, {{"src/deep/x.h", "", 0}, {"src/deep", "now a file\n"}}));
  }
  SECTION("a file replaced by a folder of its name") {
    check(with(kBase, {{"README", "", 0}, {"README/inside", "in\n"}}));
  }
  SECTION("a symlink") { check(with(kBase, {{"link", "src/a.c", kModeSymlink}})); }
  SECTION("nothing changed keeps the id") { check(kBase); }
}

TEST_CASE("the result tree is not updated with a blob that is missing or has another size", "[manifest_patch]") {
  TempDir dir;
  RepoPtr store = init_repo(dir / "store.git", true);
  git_oid before_tree = tree_of(store.get(), kBase);
  Manifest before = full(kBase);
  Manifest now = full(with(kBase, {{"src/a.c", "never stored\n"}}));
  auto missing = update_result_tree(store.get(), before_tree, manifest_changes(before, now));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == ErrorCode::kWrongState);

  Manifest lying = full(kBase);
  for (auto& f : lying.files)
    if (f.path == "src/b.c") f.size = 999, f.mode = kModeExecutable;
  auto wrong = update_result_tree(store.get(), before_tree, manifest_changes(before, lying));
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.error().code == ErrorCode::kInvalidInput);
}
