// The host's ignore rules carried to the guest (guest_excludes.h): patterns rebased onto a
// workspace that is a subfolder of its repository, and the text gathered from a real repository's
// global excludes, info/exclude and the .gitignore files above the workspace.
#include "server/workspace/snapshot/guest_excludes.h"
#include "tests/unit/workspace_snapshot/snapshot_test_util.h"

using namespace snaptest;
using lockroom::workspace::snapshot::guest_excludes;
using lockroom::workspace::snapshot::kMaxGuestExcludeBytes;
using lockroom::workspace::snapshot::rebase_ignore_patterns;

TEST_CASE("rebase_ignore_patterns keeps what applies inside the workspace folder, rebased", "[guest_excludes]") {
  // At the repository's top: every pattern applies as it is (comments and blanks go).
  CHECK(rebase_ignore_patterns("# comment\n\n*.o\n/build\n!keep.o\ndocs/out/\r\n", "") == "*.o\n/build\n!keep.o\ndocs/out/\n");
  // For the workspace app/web/: unanchored patterns as they are, anchored ones that lead into it
  // rebased, the rest (elsewhere, above, the folder itself) left out.
  std::string text =
      "*.log\n"            // any depth
      "node_modules/\n"    // any depth (only a trailing slash)
      "/app/web/dist\n"    // into the workspace
      "app/web/tmp/\n"     // into it, a folder
      "!app/web/dist/keep\n"
      "app/*/cache\n"      // a glob that matches the way in
      "/app/api/bin\n"     // elsewhere
      "/app\n"             // above the workspace
      "app/web\n"          // the workspace itself
      "**/generated\n"     // any depth, written with **: kept as it is
      "app/**/secret\n"    // ** above the workspace: not rebased, left out
      "/top.txt\n";        // at the top only
  CHECK(rebase_ignore_patterns(text, "app/web/") ==
        "*.log\nnode_modules/\n/dist\n/tmp/\n!/dist/keep\n/cache\n**/generated\n");
  // NUL bytes never reach the guest.
  CHECK(rebase_ignore_patterns(std::string("a\0b\nc\n", 6), "") == "c\n");
}

TEST_CASE("guest_excludes gathers the global excludes, info/exclude and the .gitignore files above", "[guest_excludes]") {
  TempDir home("lockroom-excl-home"), repo_dir("lockroom-excl-repo");
  home.write("global-ignore", "*.swp\n/app/web/.idea/\n");
  home.write(".gitconfig", "[core]\n\texcludesfile = " + (home / "global-ignore").string() + "\n");
  set_git_config_home(home.path());

  git_repository* raw = nullptr;
  REQUIRE(git_repository_init(&raw, repo_dir.path().c_str(), 0) == 0);
  RepoPtr repo(raw);
  repo_dir.write(".git/info/exclude", "# git's template comment\n/app/web/local.cfg\n/other\n");
  repo_dir.write(".gitignore", "node_modules/\n/app/web/build/\n");
  repo_dir.write("app/.gitignore", "web/coverage\n*.tmp\n");
  repo_dir.write("app/web/.gitignore", "this one travels in the snapshot\n");

  std::string text = guest_excludes(repo.get(), "app/web/");
  CHECK(text ==
        "# core.excludesFile\n*.swp\n/.idea/\n"
        "# the repository's info/exclude\n/local.cfg\n"
        "# the repository's top .gitignore\nnode_modules/\n/build/\n"
        "# app/ .gitignore\n/coverage\n*.tmp\n");

  // At the top of the repository: no .gitignore to carry (they are all in the snapshot).
  CHECK(guest_excludes(repo.get(), "") ==
        "# core.excludesFile\n*.swp\n/app/web/.idea/\n# the repository's info/exclude\n/app/web/local.cfg\n/other\n");
  // Outside any repository: the global excludes alone.
  CHECK(guest_excludes(nullptr, "") == "# core.excludesFile\n*.swp\n/app/web/.idea/\n");

  // A huge global excludes file is cut at a line, within the bound.
  std::string many;
  for (int i = 0; many.size() < 2 * kMaxGuestExcludeBytes; ++i) many += "pattern-" + std::to_string(i) + "\n";
  home.write("global-ignore", many);
  std::string cut = guest_excludes(nullptr, "");
  CHECK(cut.size() <= kMaxGuestExcludeBytes);
  CHECK(cut.size() > kMaxGuestExcludeBytes - 100);
  CHECK(cut.back() == '\n');
  isolate_git_config();
}
