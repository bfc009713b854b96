// Applying changes to a real workspace directory: whole files, hunks, three-way merges,
// conflicts, and everything apply must refuse (symlinks, escapes, special files, limits).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/workspace/review/apply_worktree.h"
#include "tests/unit/workspace_review/review_fixture.h"

using namespace lockroom::workspace;
using namespace lockroom::workspace::review;
using namespace lockroom::workspace::review::testing;

namespace {

std::string numbered_lines(int count) {
  std::string text;
  for (int i = 1; i <= count; ++i) text += "line " + std::to_string(i) + "\n";
  return text;
}

std::string replace_line(std::string text, const std::string& from, const std::string& to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

// A workspace on disk, lockroom's store, and the base tree of what the snapshot saw.
struct World {
  TempDir dir;
  RepoPtr store = init_repo(dir / "store.git", true);
  std::string ws = dir / "ws";
  Files base_files;
  git_oid base{};

  explicit World(Files files) : base_files(std::move(files)) {
    fs::create_directories(ws);
    write_files(ws, base_files);
    base = tree_of(store.get(), base_files);
  }
  git_oid result_of(const Files& changes) { return tree_of(store.get(), with(base_files, changes)); }
  std::vector<FileApplyResult> apply(const git_oid& result, const Selection& selection = Selection::all(),
                                     const WorktreeApplyOptions& options = {}) {
    auto applied = apply_worktree(store.get(), base, result, ws, selection, options);
    if (!applied) throw std::runtime_error(applied.error().message);
    return std::move(*applied);
  }
  std::string read(const std::string& rel) const { return read_file(ws + "/" + rel); }
  bool exists(const std::string& rel) const {
    struct stat st;
    return ::lstat((ws + "/" + rel).c_str(), &st) == 0;
  }
  bool executable(const std::string& rel) const {
    struct stat st;
    return ::lstat((ws + "/" + rel).c_str(), &st) == 0 && (st.st_mode & 0100);
  }
};

const FileApplyResult& result_for(const std::vector<FileApplyResult>& results, const std::string& path) {
  for (const FileApplyResult& r : results) {
    if (r.path == path) return r;
  }
  throw std::runtime_error("no apply result for " + path);
}

bool no_temp_files(const std::string& root) {
  for (auto& [path, state] : snapshot_dir(root)) {
    if (path.find(".lockroom-") != std::string::npos) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("apply all: create, modify, delete, rename, exec bit, symlink, binary, odd names", "[apply_worktree]") {
  std::string binary("\x89PNG\r\n\x1a\n\0\0\0binary", 18);
  World w({{"edit.txt", numbered_lines(10)},
           {"gone/only.txt", "to be deleted\n"},
           {"old name.txt", numbered_lines(20)},
           {"tool.sh", "#!/bin/sh\n"},
           {"was-exec.sh", "#!/bin/sh\n", kModeExecutable},
           {"image.png", binary},
           {"data/ünïcødé file.md", "old words\n"},
           {"keep.txt", "unchanged\n"}});
  Files changes = {{"edit.txt", replace_line(numbered_lines(10), "line 5\n", "line five\n")},
                   {"gone/only.txt", "", 0},
                   {"old name.txt", "", 0},
                   {"sub dir/new name.txt", numbered_lines(20) + "one more\n"},
                   {"tool.sh", "#!/bin/sh\n", kModeExecutable},
                   {"was-exec.sh", "#!/bin/sh\n", kModeFile},
                   {"image.png", binary + "more"},
                   {"data/ünïcødé file.md", "new words\n"},
                   {"deep/er/new.txt", "fresh\n"},
                   {"link", "keep.txt", kModeSymlink}};
  git_oid result = w.result_of(changes);
  auto before = snapshot_dir(w.ws);
  auto listed = Changes::compute(w.store.get(), w.base, result);  // reviewing writes nothing
  REQUIRE(listed.ok());
  REQUIRE(listed->diff_all().ok());
  CHECK(snapshot_dir(w.ws) == before);

  auto results = w.apply(result);
  for (const FileApplyResult& r : results) {
    INFO(r.path << ": " << apply_status_name(r.status) << " " << r.reason);
    CHECK(r.status == ApplyStatus::kApplied);
  }
  CHECK(results.size() == 9);  // the rename is one change
  CHECK(w.read("edit.txt") == replace_line(numbered_lines(10), "line 5\n", "line five\n"));
  CHECK_FALSE(w.exists("gone/only.txt"));
  CHECK_FALSE(w.exists("gone"));  // emptied directories go too
  CHECK_FALSE(w.exists("old name.txt"));
  CHECK(w.read("sub dir/new name.txt") == numbered_lines(20) + "one more\n");
  CHECK(w.executable("tool.sh"));
  CHECK_FALSE(w.executable("was-exec.sh"));
  CHECK(w.read("image.png") == binary + "more");
  CHECK(w.read("data/ünïcødé file.md") == "new words\n");
  CHECK(w.read("deep/er/new.txt") == "fresh\n");
  CHECK(fs::is_symlink(w.ws + "/link"));
  CHECK(fs::read_symlink(w.ws + "/link") == "keep.txt");
  CHECK(w.read("keep.txt") == "unchanged\n");
  CHECK(no_temp_files(w.ws));

  // Applying again finds everything already done.
  for (const FileApplyResult& r : w.apply(result)) {
    INFO(r.path);
    CHECK(r.status == ApplyStatus::kUnchanged);
  }
}

TEST_CASE("apply a selection: some files, and one of two hunks of a file", "[apply_worktree]") {
  std::string text = numbered_lines(40);
  World w({{"two-hunks.txt", text}, {"other.txt", "other\n"}, {"third.txt", "third\n"}});
  std::string changed = replace_line(replace_line(text, "line 3\n", "line three\n"), "line 35\n", "line thirty-five\n");
  git_oid result = w.result_of({{"two-hunks.txt", changed}, {"other.txt", "other changed\n"}, {"third.txt", "third changed\n"}});

  auto changes = Changes::compute(w.store.get(), w.base, result);
  REQUIRE(changes.ok());
  auto diff = changes->diff("two-hunks.txt");
  REQUIRE(diff.ok());
  REQUIRE(diff->hunks.size() == 2);
  std::string second_hunk = diff->hunks[1].id;

  auto results = w.apply(result, Selection::only({{"two-hunks.txt", std::vector<std::string>{second_hunk}},
                                                  {"other.txt", std::nullopt},
                                                  {"not-changed.txt", std::nullopt},
                                                  {"third.txt", std::vector<std::string>{"0123456789abcdef"}}}));
  CHECK(result_for(results, "two-hunks.txt").status == ApplyStatus::kApplied);
  CHECK(w.read("two-hunks.txt") == replace_line(text, "line 35\n", "line thirty-five\n"));
  CHECK(w.read("other.txt") == "other changed\n");
  CHECK(result_for(results, "not-changed.txt").status == ApplyStatus::kRefused);
  CHECK_THAT(result_for(results, "not-changed.txt").reason, Catch::Contains("not among the changed files"));
  CHECK(result_for(results, "third.txt").status == ApplyStatus::kRefused);
  CHECK_THAT(result_for(results, "third.txt").reason, Catch::Contains("is not a hunk of third.txt"));
  CHECK(w.read("third.txt") == "third\n");

  // The other hunk's id is unchanged by the first apply, so it can be applied afterwards too.
  auto again = Changes::compute(w.store.get(), w.base, result);
  REQUIRE(again.ok());
  CHECK(again->diff("two-hunks.txt")->hunks[0].id == diff->hunks[0].id);
  auto rest = w.apply(result, Selection::only({{"two-hunks.txt", std::vector<std::string>{diff->hunks[0].id}}}));
  CHECK(result_for(rest, "two-hunks.txt").status == ApplyStatus::kMerged);  // the host now differs from base
  CHECK(w.read("two-hunks.txt") == changed);
}

TEST_CASE("host edits since the snapshot: clean three-way merges are written, conflicts are untouched", "[apply_worktree]") {
  std::string text = numbered_lines(30);
  World w({{"merges.txt", text}, {"conflicts.txt", text}, {"plain.txt", "plain\n"}, {"deleted-here.txt", "x\n"},
           {"edited-here.txt", "y\n"}});
  git_oid result = w.result_of({{"merges.txt", replace_line(text, "line 3\n", "sandbox 3\n")},
                                {"conflicts.txt", replace_line(text, "line 3\n", "sandbox 3\n")},
                                {"plain.txt", "plain, changed\n"},
                                {"deleted-here.txt", "x, changed in the sandbox\n"},
                                {"edited-here.txt", "", 0}});
  // The user keeps working on the host meanwhile.
  write_files(w.ws, {{"merges.txt", replace_line(text, "line 25\n", "host 25\n")},
                     {"conflicts.txt", replace_line(text, "line 3\n", "host 3\n")},
                     {"edited-here.txt", "y, changed on the host\n"}});
  fs::remove(w.ws + "/deleted-here.txt");
  std::string conflicted_before = w.read("conflicts.txt");

  auto results = w.apply(result);
  CHECK(result_for(results, "merges.txt").status == ApplyStatus::kMerged);
  CHECK(w.read("merges.txt") == replace_line(replace_line(text, "line 3\n", "sandbox 3\n"), "line 25\n", "host 25\n"));

  const FileApplyResult& conflict = result_for(results, "conflicts.txt");
  CHECK(conflict.status == ApplyStatus::kConflict);
  CHECK_THAT(conflict.conflict_text, Catch::Contains("<<<<<<< host") && Catch::Contains("host 3") &&
                                         Catch::Contains("sandbox 3") && Catch::Contains(">>>>>>> sandbox"));
  CHECK(w.read("conflicts.txt") == conflicted_before);

  CHECK(result_for(results, "plain.txt").status == ApplyStatus::kApplied);
  CHECK(w.read("plain.txt") == "plain, changed\n");
  CHECK(result_for(results, "deleted-here.txt").status == ApplyStatus::kConflict);
  CHECK_FALSE(w.exists("deleted-here.txt"));
  CHECK(result_for(results, "edited-here.txt").status == ApplyStatus::kConflict);
  CHECK(w.read("edited-here.txt") == "y, changed on the host\n");
  CHECK(no_temp_files(w.ws));
}

TEST_CASE("a write through a pre-existing host symlink is refused and nothing outside is written", "[apply_worktree]") {
  World w(Files{{"a.txt", "a\n"}});
  std::string outside = w.dir / "outside";
  fs::create_directories(outside);
  fs::create_symlink(outside, w.ws + "/out");  // made by the user on the host, not in the snapshot
  git_oid result = w.result_of({{"out/file", "through the link\n"}, {"a.txt", "a, changed\n"}});

  auto results = w.apply(result);
  const FileApplyResult& through = result_for(results, "out/file");
  CHECK(through.status == ApplyStatus::kRefused);
  CHECK_THAT(through.reason, Catch::Contains("'out' is a symlink on the host"));
  CHECK(fs::is_empty(outside));
  CHECK(result_for(results, "a.txt").status == ApplyStatus::kApplied);
}

TEST_CASE("guest symlinks: created only when they stay inside the workspace", "[apply_worktree]") {
  World w({{"keep.txt", "k\n"}, {"dir/file.txt", "f\n"}});
  git_oid result = w.result_of({{"to-etc", "/etc", kModeSymlink},
                                {"escape", "../../outside", kModeSymlink},
                                {"dir/sneaky", "x/../../..", kModeSymlink},
                                {"into-git", ".git/hooks", kModeSymlink},
                                {"dir/fine", "../keep.txt", kModeSymlink}});
  auto results = w.apply(result);
  CHECK_THAT(result_for(results, "to-etc").reason, Catch::Contains("absolute"));
  CHECK_THAT(result_for(results, "escape").reason, Catch::Contains("outside the workspace"));
  CHECK_THAT(result_for(results, "dir/sneaky").reason, Catch::Contains("'..' after a directory"));
  CHECK_THAT(result_for(results, "into-git").reason, Catch::Contains("git's own directory"));
  for (const char* refused : {"to-etc", "escape", "dir/sneaky", "into-git"}) {
    CHECK(result_for(results, refused).status == ApplyStatus::kRefused);
    CHECK_FALSE(w.exists(refused));
  }
  CHECK(result_for(results, "dir/fine").status == ApplyStatus::kApplied);
  CHECK(fs::read_symlink(w.ws + "/dir/fine") == "../keep.txt");
}

TEST_CASE("apply never replaces a directory or a fifo, never writes .git, respects the size limit", "[apply_worktree]") {
  World w(Files{{"small.txt", "s\n"}});
  fs::create_directories(w.ws + "/adir/inner");
  REQUIRE(::mkfifo((w.ws + "/pipe").c_str(), 0644) == 0);
  git_oid result = w.result_of({{"adir", "a file where the host has a directory\n"},
                                {"pipe", "a file where the host has a fifo\n"},
                                {"big.txt", std::string(5000, 'b')},
                                {"small.txt", "s, changed\n"}});
  WorktreeApplyOptions options;
  options.max_file_bytes = 4096;
  auto results = w.apply(result, Selection::all(), options);
  CHECK(result_for(results, "adir").status == ApplyStatus::kRefused);
  CHECK_THAT(result_for(results, "adir").reason, Catch::Contains("is a directory"));
  CHECK(fs::is_directory(w.ws + "/adir/inner"));
  CHECK(result_for(results, "pipe").status == ApplyStatus::kRefused);
  CHECK(fs::is_fifo(w.ws + "/pipe"));
  CHECK(result_for(results, "big.txt").status == ApplyStatus::kRefused);
  CHECK_THAT(result_for(results, "big.txt").reason, Catch::Contains("5000 bytes, over the limit of 4096"));
  CHECK_FALSE(w.exists("big.txt"));
  CHECK(result_for(results, "small.txt").status == ApplyStatus::kApplied);

  // A tree with a name that a filesystem may treat as ".git" (libgit2's tree builder refuses some
  // spellings but not all) is still never written.
  git_treebuilder* raw_builder = nullptr;
  REQUIRE(git_treebuilder_new(&raw_builder, w.store.get(), nullptr) == 0);
  TreeBuilderPtr builder(raw_builder);
  git_oid blob;
  REQUIRE(git_blob_create_from_buffer(&blob, w.store.get(), "evil\n", 5) == 0);
  std::string evil_name;
  for (std::string name : {"GIT~1", ".GIT", ".git.", ".g\xe2\x80\x8cit"}) {
    if (git_treebuilder_insert(nullptr, builder.get(), name.c_str(), &blob, GIT_FILEMODE_BLOB) == 0) {
      evil_name = name;
      break;
    }
  }
  REQUIRE_FALSE(evil_name.empty());
  git_oid evil_tree;
  REQUIRE(git_treebuilder_write(&evil_tree, builder.get()) == 0);
  auto evil = w.apply(evil_tree);
  CHECK(result_for(evil, evil_name).status == ApplyStatus::kRefused);
  CHECK_THAT(result_for(evil, evil_name).reason, Catch::Contains("git's own directory"));
  CHECK_FALSE(w.exists(evil_name));
}

TEST_CASE("a failure in the middle leaves no half-written files", "[apply_worktree]") {
  // RLIMIT_FSIZE makes the write of the big file fail part-way (EFBIG), for root too.
  World w({{"big.txt", "original\n"}, {"free.txt", "free\n"}});
  git_oid result = w.result_of({{"big.txt", std::string(64 * 1024, 'x')}, {"free.txt", "free, changed\n"}});
  rlimit saved{};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
  auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  rlimit small{16 * 1024, saved.rlim_max};
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  std::vector<FileApplyResult> results;
  try {
    results = w.apply(result);
  } catch (...) {
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  ::signal(SIGXFSZ, old_handler);
  REQUIRE(results.size() == 2);
  CHECK(result_for(results, "big.txt").status == ApplyStatus::kRefused);
  CHECK_THAT(result_for(results, "big.txt").reason, Catch::Contains("cannot write big.txt"));
  CHECK(w.read("big.txt") == "original\n");
  CHECK(result_for(results, "free.txt").status == ApplyStatus::kApplied);
  CHECK(w.read("free.txt") == "free, changed\n");
  CHECK(no_temp_files(w.ws));
}

TEST_CASE("a rename whose new path the user already created with that content only removes the old path",
          "[apply_worktree]") {
  std::string text = numbered_lines(20);
  World w({{"old.txt", text}});
  git_oid result = w.result_of({{"old.txt", "", 0}, {"new.txt", text}});
  write_files(w.ws, {{"new.txt", text}});
  auto results = w.apply(result);
  REQUIRE(results.size() == 1);
  CHECK(results[0].status == ApplyStatus::kApplied);
  CHECK(results[0].old_path == "old.txt");
  CHECK_FALSE(w.exists("old.txt"));
  CHECK(w.read("new.txt") == text);
}

TEST_CASE("file modes: an edited file keeps its host permissions, the exec bit follows the sandbox", "[apply_worktree]") {
  World w({{"script", "#!/bin/sh\n"}, {"private.txt", "secret-ish\n"}});
  ::chmod((w.ws + "/private.txt").c_str(), 0600);
  git_oid result = w.result_of({{"script", "#!/bin/sh\necho changed\n", kModeExecutable}, {"private.txt", "edited\n"}});
  auto results = w.apply(result);
  CHECK(result_for(results, "script").status == ApplyStatus::kApplied);
  struct stat st;
  REQUIRE(::stat((w.ws + "/script").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0755);
  REQUIRE(::stat((w.ws + "/private.txt").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(w.read("private.txt") == "edited\n");
}

TEST_CASE("apply stopped between planning and the first write writes nothing", "[apply_worktree]") {
  World w({{"edit.txt", numbered_lines(10)}, {"gone.txt", "bye\n"}});
  git_oid result = w.result_of({{"edit.txt", replace_line(numbered_lines(10), "line 2\n", "two\n")}, {"gone.txt", "", 0}, {"new.txt", "new\n"}});
  auto before = snapshot_dir(w.ws);
  int asked = 0;
  WorktreeApplyOptions options;
  options.stop_before_writing = [&] {
    ++asked;
    return true;
  };
  auto stopped = apply_worktree(w.store.get(), w.base, result, w.ws, Selection::all(), options);
  REQUIRE_FALSE(stopped.ok());
  CHECK(stopped.error().code == lockroom::ErrorCode::kCancelled);
  CHECK(asked == 1);
  CHECK(snapshot_dir(w.ws) == before);

  // Not stopped: everything written, and each file says the base moves to the sandbox's side.
  options.stop_before_writing = [] { return false; };
  auto results = w.apply(result, Selection::all(), options);
  CHECK(w.read("edit.txt") == replace_line(numbered_lines(10), "line 2\n", "two\n"));
  for (const auto& r : results) CHECK(r.moves_base);
  CHECK(result_for(results, "new.txt").target.has_value());
  CHECK_FALSE(result_for(results, "gone.txt").target.has_value());
}
