// The base → result diff: list, diff with stable hunk ids, content; and a hidden benchmark.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>

#include "server/workspace/review/changes.h"
#include "tests/unit/workspace_review/review_fixture.h"

using namespace lockroom::workspace;
using namespace lockroom::workspace::review;
using namespace lockroom::workspace::review::testing;
using lockroom::ErrorCode;

namespace {

std::string numbered_lines(int count, const std::string& prefix = "line ") {
  std::string text;
  for (int i = 1; i <= count; ++i) text += prefix + std::to_string(i) + "\n";
  return text;
}

std::string replace_line(std::string text, const std::string& from, const std::string& to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

struct Scenario {
  TempDir dir;
  RepoPtr store = init_repo(dir / "store.git", true);
  Files base_files;
  Files result_files;
  git_oid base{}, result{};

  Scenario() {
    std::string binary("\x89PNG\r\n\x1a\n\0\0\0binary", 18);
    base_files = {
        {"keep.txt", "unchanged\n"},
        {"edit.txt", numbered_lines(30)},
        {"gone.txt", "to be deleted\n"},
        {"old name.txt", numbered_lines(20, "moved ")},
        {"tool.sh", "#!/bin/sh\necho tool\n"},
        {"was-exec.sh", "#!/bin/sh\n", kModeExecutable},
        {"image.png", binary},
        {"large.txt", numbered_lines(20000)},
        {"data/ünïcødé file.md", "old words\n"},
        {"typechange", "a file that becomes a link\n"},
    };
    result_files = with(base_files, {
        {"edit.txt", replace_line(replace_line(numbered_lines(30), "line 3\n", "line three\n"), "line 27\n", "line twenty-seven\n")},
        {"gone.txt", "", 0},
        {"old name.txt", "", 0},
        {"new name.txt", numbered_lines(20, "moved ") + "one more\n"},
        {"tool.sh", "#!/bin/sh\necho tool\n", kModeExecutable},
        {"was-exec.sh", "#!/bin/sh\n", kModeFile},
        {"image.png", binary + "more"},
        {"large.txt", replace_line(numbered_lines(20000), "line 10000\n", "line ten thousand\n")},
        {"data/ünïcødé file.md", "new words\n"},
        {"added dir/new file.txt", "fresh\n"},
        {"link", "keep.txt", kModeSymlink},
        {"typechange", "keep.txt", kModeSymlink},
    });
    base = tree_of(store.get(), base_files);
    result = tree_of(store.get(), result_files);
  }
};

const FileChange& change_of(const Changes& changes, const std::string& path) {
  const FileChange* c = changes.find(path);
  if (!c) throw std::runtime_error("no change for " + path);
  return *c;
}

}  // namespace

TEST_CASE("changes list: statuses, renames, modes, binary, line counts, path order", "[changes]") {
  Scenario s;
  auto changes = Changes::compute(s.store.get(), s.base, s.result);
  REQUIRE(changes.ok());
  std::vector<std::string> paths;
  for (const FileChange& c : changes->list()) paths.push_back(c.path);
  CHECK(paths == std::vector<std::string>{"added dir/new file.txt", "data/ünïcødé file.md", "edit.txt", "gone.txt",
                                          "image.png", "large.txt", "link", "new name.txt", "tool.sh", "typechange",
                                          "was-exec.sh"});

  const FileChange& edit = change_of(*changes, "edit.txt");
  CHECK(edit.status == ChangeStatus::kModified);
  CHECK(edit.added_lines == 2);
  CHECK(edit.removed_lines == 2);
  CHECK_FALSE(edit.binary);

  const FileChange& renamed = change_of(*changes, "new name.txt");
  CHECK(renamed.status == ChangeStatus::kRenamed);
  CHECK(renamed.old_path == "old name.txt");
  CHECK(renamed.added_lines == 1);
  CHECK(renamed.removed_lines == 0);
  CHECK(&change_of(*changes, "old name.txt") == &renamed);

  CHECK(change_of(*changes, "gone.txt").status == ChangeStatus::kDeleted);
  CHECK(change_of(*changes, "gone.txt").new_mode == 0);
  CHECK(change_of(*changes, "added dir/new file.txt").status == ChangeStatus::kAdded);
  CHECK(change_of(*changes, "added dir/new file.txt").old_mode == 0);
  CHECK(change_of(*changes, "tool.sh").old_mode == kModeFile);
  CHECK(change_of(*changes, "tool.sh").new_mode == kModeExecutable);
  CHECK(change_of(*changes, "tool.sh").added_lines == 0);
  CHECK(change_of(*changes, "was-exec.sh").new_mode == kModeFile);
  CHECK(change_of(*changes, "image.png").binary);
  CHECK(change_of(*changes, "link").new_mode == kModeSymlink);
  CHECK(change_of(*changes, "typechange").status == ChangeStatus::kTypeChange);
  CHECK(change_of(*changes, "large.txt").added_lines == 1);
  CHECK(std::string(status_name(renamed.status)) == "renamed");
}

TEST_CASE("changes diff: hunks with ids that are stable across computations, and the unified patch", "[changes]") {
  Scenario s;
  auto first = Changes::compute(s.store.get(), s.base, s.result);
  auto second = Changes::compute(s.store.get(), s.base, s.result);
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  auto a = first->diff("edit.txt");
  auto b = second->diff("edit.txt");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(a->hunks.size() == 2);
  CHECK(a->hunks[0].id == b->hunks[0].id);
  CHECK(a->hunks[1].id == b->hunks[1].id);
  CHECK(a->hunks[0].id != a->hunks[1].id);
  CHECK(a->hunks[0].old_start == 1);
  CHECK_THAT(a->hunks[0].header, Catch::StartsWith("@@ -1,6 +1,6 @@"));
  CHECK_THAT(a->patch, Catch::Contains("diff --git a/edit.txt b/edit.txt") && Catch::Contains("-line 3\n+line three\n"));

  // An id is a fixed function of the content: recomputing it from the returned hunk agrees.
  CHECK(hunk_id("edit.txt", "edit.txt", a->hunks[1]) == a->hunks[1].id);

  auto binary = first->diff("image.png");
  REQUIRE(binary.ok());
  CHECK(binary->hunks.empty());
  CHECK_THAT(binary->patch, Catch::Contains("Binary files"));

  auto mode_only = first->diff("tool.sh");
  REQUIRE(mode_only.ok());
  CHECK(mode_only->hunks.empty());
  CHECK_THAT(mode_only->patch, Catch::Contains("new mode 100755"));

  auto all = first->diff_all();
  REQUIRE(all.ok());
  REQUIRE(all->size() == first->list().size());
  CHECK((*all)[2].change.path == "edit.txt");
  CHECK((*all)[2].hunks[0].id == a->hunks[0].id);

  auto unknown = first->diff("keep.txt");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().code == ErrorCode::kNotFound);
}

TEST_CASE("changes diff: a hunk keeps its id when the file is edited elsewhere, not when its own lines change", "[changes]") {
  TempDir dir;
  RepoPtr store = init_repo(dir / "store.git", true);
  std::string base = numbered_lines(60);
  std::string agent = replace_line(base, "line 40\n", "line forty\n");
  // The same base; the agent also edited line 2, far above the hunk at line 40.
  std::string agent_and_above = replace_line(agent, "line 2\n", "line two\n");
  // The hunk's own context changed (line 38 is one of its context lines).
  std::string inside = replace_line(agent, "line 38\n", "line thirty-eight\n");
  git_oid base_tree = tree_of(store.get(), {{"f.txt", base}});
  auto hunks_of = [&](const std::string& result) {
    auto changes = Changes::compute(store.get(), base_tree, tree_of(store.get(), {{"f.txt", result}}));
    REQUIRE(changes.ok());
    auto d = changes->diff("f.txt");
    REQUIRE(d.ok());
    return d->hunks;
  };
  auto alone = hunks_of(agent);
  auto with_above = hunks_of(agent_and_above);
  auto changed = hunks_of(inside);
  REQUIRE(alone.size() == 1);
  REQUIRE(with_above.size() == 2);
  CHECK(with_above[1].old_start == alone[0].old_start);  // a line replaced: same position...
  CHECK(with_above[1].id == alone[0].id);
  REQUIRE(changed.size() == 1);
  CHECK(changed[0].id != alone[0].id);

  // Lines inserted above shift the hunk: its id stays.
  std::string shifted_agent = "new 1\nnew 2\nnew 3\n" + agent;
  std::string shifted_base = base;
  auto shifted = Changes::compute(store.get(), base_tree, tree_of(store.get(), {{"f.txt", shifted_agent}}));
  REQUIRE(shifted.ok());
  auto sd = shifted->diff("f.txt");
  REQUIRE(sd.ok());
  REQUIRE(sd->hunks.size() == 2);
  CHECK(sd->hunks[1].new_start != alone[0].new_start);
  CHECK(sd->hunks[1].id == alone[0].id);

  // Two identical edits of one file (same lines and context): distinct ids.
  std::string twice_base = "a\nb\nx\nc\nd\n" + numbered_lines(20) + "a\nb\nx\nc\nd\n";
  std::string twice = "a\nb\ny\nc\nd\n" + numbered_lines(20) + "a\nb\ny\nc\nd\n";
  git_oid twice_tree = tree_of(store.get(), {{"f.txt", twice_base}});
  auto both = Changes::compute(store.get(), twice_tree, tree_of(store.get(), {{"f.txt", twice}}));
  REQUIRE(both.ok());
  auto bd = both->diff("f.txt");
  REQUIRE(bd.ok());
  REQUIRE(bd->hunks.size() == 2);
  CHECK(bd->hunks[0].lines.size() == bd->hunks[1].lines.size());
  CHECK(bd->hunks[0].id != bd->hunks[1].id);
  (void)shifted_base;
}

TEST_CASE("changes content: base and current bytes, binary flag, bounds", "[changes]") {
  Scenario s;
  ChangesOptions options;
  options.max_content_bytes = 1000;
  auto changes = Changes::compute(s.store.get(), s.base, s.result, options);
  REQUIRE(changes.ok());
  CHECK(changes->content("data/ünïcødé file.md", Side::kBase)->bytes == "old words\n");
  CHECK(changes->content("data/ünïcødé file.md", Side::kCurrent)->bytes == "new words\n");
  auto image = changes->content("image.png", Side::kCurrent);
  REQUIRE(image.ok());
  CHECK(image->binary);
  CHECK(image->bytes.size() == 22);
  CHECK(changes->content("link", Side::kCurrent)->mode == kModeSymlink);
  CHECK(changes->content("gone.txt", Side::kCurrent).error().code == ErrorCode::kNotFound);
  CHECK(changes->content("added dir", Side::kCurrent).error().code == ErrorCode::kInvalidInput);
  auto large = changes->content("large.txt", Side::kBase);
  REQUIRE_FALSE(large.ok());
  CHECK(large.error().code == ErrorCode::kLimitExceeded);
  CHECK_THAT(large.error().message, Catch::Contains("large.txt"));
}

TEST_CASE("changes patch for git apply: git turns the base into the result, binary files and renames included", "[changes]") {
  Scenario s;
  auto changes = Changes::compute(s.store.get(), s.base, s.result);
  REQUIRE(changes);
  auto patch = changes->patch_for_git_apply();
  REQUIRE(patch);
  CHECK(patch->find("GIT binary patch") != std::string::npos);
  CHECK(patch->find("rename from old name.txt") != std::string::npos);

  TempDir work;
  std::string tree = work / "tree";
  write_files(tree, s.base_files);
  std::ofstream(work / "changes.patch", std::ios::binary) << *patch;
  std::string command = "cd '" + tree + "' && git apply '" + (work / "changes.patch") + "' 2>'" + (work / "err") + "'";
  int status = std::system(command.c_str());
  INFO(read_file(work / "err"));
  REQUIRE(status == 0);

  TempDir expected;
  write_files(expected.path(), s.result_files);
  CHECK(snapshot_dir(tree) == snapshot_dir(expected.path()));

  // Some files only: a rename named by its new path, and nothing else.
  auto some = changes->patch_for_git_apply({"new name.txt"});
  REQUIRE(some);
  CHECK(some->rfind("diff --git a/old name.txt b/new name.txt\n", 0) == 0);
  CHECK(some->find("GIT binary patch") == std::string::npos);
  CHECK(some->find("diff --git", 1) == std::string::npos);
  CHECK(*changes->patch_for_git_apply({"old name.txt"}) == *some);
  CHECK(changes->patch_for_git_apply({"not changed.txt"})->empty());
}

TEST_CASE("changes of many files: each file's counts and patch are its own, in path order", "[changes]") {
  // Enough files that compute() makes the patches on two threads.
  TempDir dir;
  RepoPtr store = init_repo(dir / "store.git", true);
  Files base_files, edits;
  for (int i = 0; i < 40; ++i) {
    std::string name = "f" + std::to_string(100 + i) + ".txt";
    base_files.push_back({name, numbered_lines(50 + i)});
    std::string edited = numbered_lines(50 + i);
    for (int extra = 0; extra <= i % 4; ++extra) edited += "added " + std::to_string(i) + "." + std::to_string(extra) + "\n";
    edits.push_back({name, replace_line(edited, "line 1\n", "")});
  }
  base_files.push_back({"moved/from.txt", numbered_lines(30, "moved ")});
  edits.push_back({"moved/from.txt", "", 0});
  edits.push_back({"moved/to.txt", numbered_lines(30, "moved ")});
  git_oid base = tree_of(store.get(), base_files);
  git_oid result = tree_of(store.get(), with(base_files, edits));

  auto changes = Changes::compute(store.get(), base, result);
  REQUIRE(changes);
  REQUIRE(changes->list().size() == 41);
  for (std::size_t k = 0; k + 1 < changes->list().size(); ++k) CHECK(changes->list()[k].path < changes->list()[k + 1].path);
  for (int i = 0; i < 40; ++i) {
    std::string name = "f" + std::to_string(100 + i) + ".txt";
    const FileChange& c = change_of(*changes, name);
    CHECK(c.added_lines == static_cast<std::size_t>(i % 4 + 1));
    CHECK(c.removed_lines == 1);
    auto diff = changes->diff(name);
    REQUIRE(diff);
    CHECK(diff->patch.find("+added " + std::to_string(i) + ".0\n") != std::string::npos);
    CHECK(diff->patch.find("--- a/" + name) != std::string::npos);
  }
  CHECK(change_of(*changes, "moved/to.txt").status == ChangeStatus::kRenamed);
  CHECK(change_of(*changes, "moved/to.txt").old_path == "moved/from.txt");
}

TEST_CASE("bench: list and diff 100 changed files", "[.bench][changes]") {
  TempDir dir;
  auto store = init_repo(dir / "store.git", true);
  Files base_files, result_files;
  for (int i = 0; i < 100; ++i) {
    std::string text = numbered_lines(200, "file " + std::to_string(i) + " line ");
    base_files.push_back({"src/f" + std::to_string(i) + ".c", text});
    result_files.push_back({"src/f" + std::to_string(i) + ".c", replace_line(replace_line(text, " line 50\n", " line fifty\n"),
                                                                              " line 150\n", " line 150 changed\n")});
  }
  for (int i = 0; i < 2000; ++i) {  // an unchanged rest of the workspace
    base_files.push_back({"rest/r" + std::to_string(i) + ".txt", "same " + std::to_string(i) + "\n"});
    result_files.push_back(base_files.back());
  }
  git_oid base = tree_of(store.get(), base_files);
  git_oid result = tree_of(store.get(), result_files);
  auto started = std::chrono::steady_clock::now();
  auto changes = Changes::compute(store.get(), base, result);
  REQUIRE(changes.ok());
  auto listed = std::chrono::steady_clock::now();
  auto all = changes->diff_all();
  REQUIRE(all.ok());
  auto diffed = std::chrono::steady_clock::now();
  REQUIRE(all->size() == 100);
  auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  std::printf("changes for 100 files: list %.1f ms, diff of all %.1f ms, total %.1f ms\n", ms(listed - started),
              ms(diffed - listed), ms(diffed - started));
  CHECK(ms(diffed - started) < 1000);
}
