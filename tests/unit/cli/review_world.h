// A world for testing `lockroom run`'s review (server/cli/run_review.h) without a guest: a real
// host folder (a git repository with one commit, or a plain folder), snapshotted into a real
// store as the sandbox's base; the agent's work is a result tree written into that store, and
// the changes between them are computed by the review library, as a refresh would. The review
// then acts on the real host folder; its messages go to a string.
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "server/cli/run_review.h"
#include "server/workspace/review/changes.h"
#include "tests/support/shell.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/workspace_review/review_fixture.h"

namespace lockroom::cli::testing {

namespace fs = std::filesystem;
using workspace::review::testing::FileSpec;
using workspace::review::testing::Files;
using workspace::review::testing::with;
using workspace::review::kModeExecutable;
using workspace::review::kModeFile;

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Git for the tests: no user or system configuration, never above the test's folder.
inline std::string git_env(const fs::path& root) {
  return "GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 GIT_CEILING_DIRECTORIES=" + root.string() +
         " GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t ";
}

// The files of the snapshot every test starts from.
inline Files base_files() {
  return {
      {"README.md", "# demo\nline 2\nline 3\n"},
      {"notes.txt", "keep me\n"},
      {"src/app.c", "int main(void) { return 0; }\n"},
      {"tool.sh", "#!/bin/sh\necho hi\n"},
      {"logo.bin", std::string("\x89PNG\0\0\x01\x02\x03", 9)},
      {"old.txt", "to be removed\n"},
  };
}

// What the agent made of them: every kind of change, a binary one and a name git quotes.
inline Files agent_files() {
  return with(base_files(), {
                                {"README.md", "# demo\nline 2 from the agent\nline 3\n"},
                                {"notes.txt", "keep me\nagent line\n"},
                                {"tool.sh", "#!/bin/sh\necho hi\n", kModeExecutable},
                                {"logo.bin", std::string("\x89PNG\0\0\x07\x08\x09\x0a", 10)},
                                {"old.txt", "", 0},  // mode 0: deleted
                                {"added.txt", "hello\n"},
                                {"caf\xc3\xa9 menu.txt", "quoted\n"},
                            });
}

class ReviewWorld {
 public:
  // The host folder holds `files`; a git repository with them committed when `git`.
  explicit ReviewWorld(const Files& files = base_files(), bool git = true) {
    fs::create_directories(host);
    workspace::review::testing::write_files(host.string(), files);
    if (git) lockroom::testing::sh("cd " + host.string() + " && " + git_env(root.path()) + "git init -q -b main && " + git_env(root.path()) +
                                   "git add -A && " + git_env(root.path()) + "git commit -q -m initial");
  }

  // Snapshots the host (as the sandbox's base), then makes `result` the agent's tree.
  void agent_made(const Files& result) {
    auto snapshot = workspace::snapshot::take_snapshot(host.string(), store_dir.string());
    INFO((snapshot ? std::string() : snapshot.error().message));
    REQUIRE(snapshot);
    base = std::move(*snapshot);
    git_repository* raw = nullptr;
    REQUIRE(git_repository_open(&raw, store_dir.c_str()) == 0);
    store.reset(raw);
    git_oid base_tree, result_tree = workspace::review::testing::tree_of(store.get(), result);
    REQUIRE(git_oid_fromstr(&base_tree, base.tree_id.c_str()) == 0);
    auto changes = workspace::review::Changes::compute(store.get(), base_tree, result_tree);
    INFO((changes ? std::string() : changes.error().message));
    REQUIRE(changes);
    set.changes = std::make_shared<workspace::review::Changes>(std::move(*changes));
  }

  ReviewContext context(int answers_fd = -1) {
    ReviewContext c;
    c.host_path = host.string();
    c.base = &base;
    c.patch_dir = patches;
    c.sandbox_id = "sb-test";
    c.out = &out;
    c.answers_fd = answers_fd;
    return c;
  }

  int review(ReviewChoice::Mode mode, const std::string& value = "") {
    ReviewChoice choice;
    choice.mode = mode;
    if (mode == ReviewChoice::Mode::kBranch) choice.branch = value;
    if (mode == ReviewChoice::Mode::kPatch) choice.patch_file = value;
    return review_changes(set, choice, context());
  }

  // The user edits the host folder.
  void write_host(const std::string& relative, const std::string& content) {
    std::ofstream(host / relative, std::ios::binary | std::ios::trunc) << content;
  }

  // What the review printed so far.
  std::string printed() const { return out.str(); }
  fs::path fallback_patch() const { return patches / "sb-test.patch"; }

  // A copy of the host folder as it was snapshotted (`files`), with `patch` applied by git there
  // as the review's message says (in a clone when the host is a repository). Fails the test when
  // git refuses the patch; returns the copy's folder.
  fs::path apply_to_copy(const fs::path& patch, const Files& files, bool git = true) {
    fs::path copy = root / ("copy" + std::to_string(++copies_));
    if (git) {
      lockroom::testing::sh(git_env(root.path()) + "git clone -q " + host.string() + " " + copy.string());
    } else {
      fs::create_directories(copy);
      workspace::review::testing::write_files(copy.string(), files);
    }
    lockroom::testing::sh("cd " + copy.string() + " && " + git_env(root.path()) + "git apply " + patch.string() + " 2>&1");
    return copy;
  }

  lockroom::testing::TempDir root{"lockroom-runreview"};
  fs::path host = root / "host";
  fs::path store_dir = root / "store.git";
  fs::path patches = root / "patches";
  workspace::snapshot::SnapshotResult base;
  workspace::RepoPtr store;
  core::ChangeSet set;
  std::ostringstream out;

 private:
  int copies_ = 0;
};

// Every regular file and symlink under `dir` (not .git): path → content, with " (x)" appended
// for an executable file.
inline std::map<std::string, std::string> folder_files(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    if (it->path().filename() == ".git") {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file()) continue;
    struct stat st;
    ::lstat(it->path().c_str(), &st);
    out[fs::relative(it->path(), dir).string()] = lockroom::testing::read_file(it->path()) + ((st.st_mode & 0100) ? " (x)" : "");
  }
  return out;
}

// The same for a list of files.
inline std::map<std::string, std::string> files_map(const Files& files) {
  std::map<std::string, std::string> out;
  for (const auto& f : files) out[f.path] = f.content + (f.mode == kModeExecutable ? " (x)" : "");
  return out;
}

}  // namespace lockroom::cli::testing
