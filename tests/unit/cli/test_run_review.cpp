// `lockroom run`'s review when a flag decides (--apply, --branch NAME, --patch FILE, --discard,
// none without a terminal), on real review trees and a real host folder (review_world.h): the
// diffstat, what reaches the host, and that whatever was not applied is saved as a patch that
// git applies.
#include <catch2/catch.hpp>

#include "tests/unit/cli/review_world.h"

using namespace lockroom::cli;
using namespace lockroom::cli::testing;
using lockroom::testing::read_file;
using lockroom::testing::sh;
using Mode = ReviewChoice::Mode;

TEST_CASE("run's review prints git's diffstat and summary of the agent's changes", "[cli][review]") {
  ReviewWorld w;
  w.agent_made(agent_files());
  REQUIRE(w.review(Mode::kDiscard) == 0);
  std::string out = w.printed();
  INFO(out);
  CHECK(contains(out, "lockroom: changes to " + w.host.string() + ":\n"));
  // Names padded to the longest, "café menu.txt" (14 bytes), as git pads them.
  CHECK(contains(out, " README.md      | 2 +-\n"));
  CHECK(contains(out, " notes.txt      | 1 +\n"));
  CHECK(contains(out, " logo.bin       | Bin\n"));
  CHECK(contains(out, " tool.sh        | 0\n"));
  CHECK(contains(out, " 7 files changed, 4 insertions(+), 2 deletions(-)\n"));
  CHECK(contains(out, " create mode 100644 added.txt\n"));
  CHECK(contains(out, " delete mode 100644 old.txt\n"));
  CHECK(contains(out, " mode change 100644 => 100755 tool.sh\n"));
  CHECK(contains(out, "lockroom: changes discarded\n"));
}

TEST_CASE("run --discard leaves the host as it was and saves nothing", "[cli][review]") {
  ReviewWorld w;
  w.agent_made(agent_files());
  auto before = folder_files(w.host);
  CHECK(w.review(Mode::kDiscard) == 0);
  CHECK(folder_files(w.host) == before);
  CHECK_FALSE(fs::exists(w.patches));
}

TEST_CASE("run with no changes says so and does nothing", "[cli][review]") {
  ReviewWorld w;
  w.agent_made(base_files());
  CHECK(w.review(Mode::kApply) == 0);
  CHECK(w.printed() == "lockroom: no changes to the workspace\n");
}

TEST_CASE("run --apply writes every change to the host", "[cli][review]") {
  ReviewWorld w;
  w.agent_made(agent_files());
  CHECK(w.review(Mode::kApply) == 0);
  INFO(w.printed());
  CHECK(folder_files(w.host) == files_map(agent_files()));
  CHECK(contains(w.printed(), "lockroom: applied 7 of 7 files to the workspace\n"));
  CHECK_FALSE(fs::exists(w.patches));
}

TEST_CASE("run --apply keeps the user's conflicting edit and saves the agent's side as a patch", "[cli][review]") {
  ReviewWorld w;
  w.agent_made(agent_files());
  // Meanwhile the user edited the line the agent edited.
  w.write_host("README.md", "# demo\nline 2 from the user\nline 3\n");
  CHECK(w.review(Mode::kApply) == 1);
  std::string out = w.printed();
  INFO(out);
  CHECK(read_file(w.host / "README.md") == "# demo\nline 2 from the user\nline 3\n");
  CHECK(read_file(w.host / "added.txt") == "hello\n");
  CHECK(contains(out, "  conflict: README.md"));
  CHECK(contains(out, "lockroom: applied 6 of 7 files to the workspace; 1 left as they were (conflicts or refused)\n"));
  CHECK(contains(out, "lockroom: saved the 1 file not applied in " + w.fallback_patch().string() + "\n"));
  CHECK(contains(out, "  apply with: cd " + w.host.string() + " && git apply " + w.fallback_patch().string() + "\n"));
  // The patch holds README.md only, and git takes it where README.md is as the sandbox saw it.
  std::string patch = read_file(w.fallback_patch());
  CHECK(contains(patch, "diff --git a/README.md b/README.md\n"));
  CHECK_FALSE(contains(patch, "added.txt"));
  fs::path copy = w.apply_to_copy(w.fallback_patch(), base_files());
  auto expected = files_map(base_files());
  expected["README.md"] = "# demo\nline 2 from the agent\nline 3\n";
  CHECK(folder_files(copy) == expected);
}

TEST_CASE("run --patch FILE writes a patch git applies, binary and mode changes included", "[cli][review]") {
  ReviewWorld w;
  w.agent_made(agent_files());
  auto before = folder_files(w.host);
  fs::path file = w.root / "out/changes.patch";
  CHECK(w.review(Mode::kPatch, file.string()) == 0);
  INFO(w.printed());
  CHECK(folder_files(w.host) == before);
  CHECK(contains(w.printed(), "lockroom: saved the changes in " + file.string() + "\n"));
  std::string patch = read_file(file);
  CHECK(contains(patch, "GIT binary patch"));
  CHECK(contains(patch, "\"b/caf\\303\\251 menu.txt\""));
  fs::path copy = w.apply_to_copy(file, base_files());
  CHECK(folder_files(copy) == files_map(agent_files()));
  CHECK_FALSE(fs::exists(w.patches));
}

TEST_CASE("run --patch FILE that cannot be written saves the patch in the patches folder", "[cli][review]") {
  ReviewWorld w;
  w.agent_made(agent_files());
  w.write_host("blocker", "a file where the patch's folder would be\n");
  CHECK(w.review(Mode::kPatch, (w.host / "blocker/changes.patch").string()) == 1);
  INFO(w.printed());
  CHECK(contains(w.printed(), "lockroom: cannot write the patch to " + (w.host / "blocker/changes.patch").string()));
  fs::path copy = w.apply_to_copy(w.fallback_patch(), base_files());
  CHECK(folder_files(copy) == files_map(agent_files()));
}

TEST_CASE("run --branch NAME commits the changes and leaves the checkout alone", "[cli][review]") {
  ReviewWorld w;
  w.agent_made(agent_files());
  auto before = folder_files(w.host);
  std::string head = sh("cd " + w.host.string() + " && git rev-parse HEAD");
  CHECK(w.review(Mode::kBranch, "review-me") == 0);
  INFO(w.printed());
  CHECK(contains(w.printed(), "lockroom: saved as lockroom/review-me (your checkout is untouched"));
  CHECK(folder_files(w.host) == before);
  CHECK(sh("cd " + w.host.string() + " && git rev-parse HEAD") == head);
  CHECK(sh("cd " + w.host.string() + " && git status --porcelain") == "");
  CHECK(sh("cd " + w.host.string() + " && git show lockroom/review-me:README.md") == "# demo\nline 2 from the agent\nline 3\n");
  CHECK(sh("cd " + w.host.string() + " && git ls-tree lockroom/review-me tool.sh").rfind("100755 ", 0) == 0);
  CHECK_FALSE(fs::exists(w.patches));
}

TEST_CASE("run --branch in a folder that is no git repository saves a patch instead", "[cli][review]") {
  ReviewWorld w(base_files(), false);
  w.agent_made(agent_files());
  CHECK(w.review(Mode::kBranch, "review-me") == 1);
  std::string out = w.printed();
  INFO(out);
  CHECK(contains(out, "lockroom: cannot save a branch: " + w.host.string() + " is not a git repository\n"));
  CHECK(contains(out, "lockroom: saved the changes in " + w.fallback_patch().string() + "\n"));
  fs::path copy = w.apply_to_copy(w.fallback_patch(), base_files(), false);
  CHECK(folder_files(copy) == files_map(agent_files()));
}

TEST_CASE("run --branch on an uncommitted edit to the same lines: two commits, nothing lost", "[cli][review]") {
  ReviewWorld w;
  // An uncommitted edit when the sandbox starts, on the line the agent then edits.
  w.write_host("README.md", "# demo\nline 2 uncommitted\nline 3\n");
  Files agent = with(base_files(), {{"README.md", "# demo\nline 2 from the agent\nline 3\n"},
                                                                 {"added.txt", "hello\n"}});
  w.agent_made(agent);
  CHECK(w.review(Mode::kBranch, "review-me") == 0);
  INFO(w.printed());
  CHECK(contains(w.printed(), "lockroom: saved as lockroom/review-me"));
  CHECK(contains(w.printed(), "holds your uncommitted and untracked files"));
  std::string git = "cd " + w.host.string() + " && " + git_env(w.root.path()) + "git ";
  CHECK(sh(git + "show lockroom/review-me:README.md") == "# demo\nline 2 from the agent\nline 3\n");
  CHECK(sh(git + "show lockroom/review-me^:README.md") == "# demo\nline 2 uncommitted\nline 3\n");
  CHECK(sh(git + "diff --name-only lockroom/review-me^ lockroom/review-me") == "README.md\nadded.txt\n");
  CHECK(read_file(w.host / "README.md") == "# demo\nline 2 uncommitted\nline 3\n");  // the checkout is untouched
  CHECK_FALSE(fs::exists(w.fallback_patch()));
}

TEST_CASE("run without a flag and without a terminal saves the changes as a patch", "[cli][review]") {
  ReviewWorld w;
  w.agent_made(agent_files());
  auto before = folder_files(w.host);
  CHECK(w.review(Mode::kAsk) == 0);
  INFO(w.printed());
  CHECK(folder_files(w.host) == before);
  CHECK(contains(w.printed(), "lockroom: saved the changes in " + w.fallback_patch().string() + "\n"));
  fs::path copy = w.apply_to_copy(w.fallback_patch(), base_files());
  CHECK(folder_files(copy) == files_map(agent_files()));
}

TEST_CASE("a workspace below its repository's top: the patch's message says where git applies it", "[cli][review]") {
  ReviewWorld w(Files{{"top.txt", "top\n"}, {"sub/a.txt", "a\n"}});
  w.host = w.host / "sub";  // the workspace is the repository's sub/ folder
  w.agent_made({{"a.txt", "a from the agent\n"}});
  CHECK(w.review(Mode::kAsk) == 0);
  std::string out = w.printed();
  INFO(out);
  std::string command = "cd " + w.host.string() + " && git apply --directory=sub " + w.fallback_patch().string();
  REQUIRE(contains(out, "  apply with: " + command + "\n"));
  CHECK(sh(git_env(w.root.path()) + " sh -c '" + command + "' 2>&1") == "");
  CHECK(read_file(w.host / "a.txt") == "a from the agent\n");
}
