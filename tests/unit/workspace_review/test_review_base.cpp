// The review's base moving after an apply, going back after a discard, and telling which files of
// an older view sit on a base that moved since (review_base.h), on real trees in a real store.
#include <catch2/catch.hpp>

#include "server/workspace/review/review_base.h"
#include "tests/unit/workspace_review/review_fixture.h"

using namespace lockroom::workspace;
using namespace lockroom::workspace::review;
using namespace lockroom::workspace::review::testing;

namespace {

std::optional<std::string> blob_at(git_repository* store, const git_oid& tree, const std::string& path) {
  git_tree* t = nullptr;
  if (git_tree_lookup(&t, store, &tree) != 0) return std::nullopt;
  TreePtr owned(t);
  git_tree_entry* e = nullptr;
  if (git_tree_entry_bypath(&e, t, path.c_str()) != 0) return std::nullopt;
  git_blob* b = nullptr;
  int rc = git_blob_lookup(&b, store, git_tree_entry_id(e));
  git_tree_entry_free(e);
  if (rc != 0) return std::nullopt;
  std::string out(static_cast<const char*>(git_blob_rawcontent(b)), static_cast<std::size_t>(git_blob_rawsize(b)));
  git_blob_free(b);
  return out;
}

}  // namespace

TEST_CASE("review base: applied files take the sandbox's side, conflicts keep theirs; older views see which moved", "[review_base]") {
  TempDir dir;
  RepoPtr store = init_repo(dir / "store.git", true);
  Files base_files{{"a.txt", "a\n"}, {"b.txt", "b\n"}, {"dir/c.txt", "c\n"}, {"old.txt", "moving\n"}};
  git_oid base = tree_of(store.get(), base_files);
  git_oid result = tree_of(store.get(), with(base_files, {{"a.txt", "A\n"}, {"b.txt", "B\n"}, {"dir/c.txt", "", 0}, {"old.txt", "", 0},
                                                         {"new.txt", "moving\n"}, {"dir/d.txt", "d\n"}}));
  auto changes = Changes::compute(store.get(), base, result);
  REQUIRE(changes.ok());

  // a.txt applied, b.txt conflicted, dir/c.txt deleted, the rename applied, dir/d.txt merged.
  auto target = [&](const std::string& content) { return TreeSide{kModeFile, blob_id(content)}; };
  std::vector<FileApplyResult> applied(5);
  applied[0].path = applied[0].old_path = "a.txt", applied[0].moves_base = true, applied[0].target = target("A\n");
  applied[1].path = applied[1].old_path = "b.txt", applied[1].status = ApplyStatus::kConflict;
  applied[2].path = applied[2].old_path = "dir/c.txt", applied[2].moves_base = true;
  applied[3].path = "new.txt", applied[3].old_path = "old.txt", applied[3].moves_base = true, applied[3].target = target("moving\n");
  applied[4].path = applied[4].old_path = "dir/d.txt", applied[4].moves_base = true, applied[4].target = target("d\n");
  auto moved = update_base(store.get(), base, updates_after_apply(applied));
  REQUIRE(moved.ok());
  CHECK(blob_at(store.get(), moved->tree, "a.txt") == "A\n");
  CHECK(blob_at(store.get(), moved->tree, "b.txt") == "b\n");  // a conflict keeps its base
  CHECK_FALSE(blob_at(store.get(), moved->tree, "dir/c.txt"));
  CHECK_FALSE(blob_at(store.get(), moved->tree, "old.txt"));
  CHECK(blob_at(store.get(), moved->tree, "new.txt") == "moving\n");
  CHECK(blob_at(store.get(), moved->tree, "dir/d.txt") == "d\n");
  CHECK_FALSE(moved->written.empty());

  // The next diff against the moved base: only b.txt is left to decide.
  auto next = Changes::compute(store.get(), moved->tree, result);
  REQUIRE(next.ok());
  REQUIRE(next->list().size() == 1);
  CHECK(next->list()[0].path == "b.txt");

  // The older view: every file but b.txt sits on a base that moved.
  auto differs = base_differs(store.get(), base, moved->tree, changes->list());
  REQUIRE(differs.ok());
  CHECK(*differs == std::set<std::string>{"a.txt", "dir/c.txt", "dir/d.txt", "new.txt"});
  auto same = base_differs(store.get(), moved->tree, moved->tree, changes->list());
  REQUIRE(same.ok());
  CHECK(same->empty());

  // A discard puts paths back to the snapshot: a.txt as it was, new.txt gone again.
  auto back = updates_back_to(store.get(), base, {"a.txt", "new.txt"});
  REQUIRE(back.ok());
  auto restored = update_base(store.get(), moved->tree, *back);
  REQUIRE(restored.ok());
  CHECK(blob_at(store.get(), restored->tree, "a.txt") == "a\n");
  CHECK_FALSE(blob_at(store.get(), restored->tree, "new.txt"));
  CHECK(blob_at(store.get(), restored->tree, "dir/d.txt") == "d\n");  // untouched by the discard
}
