// The store side: nothing of the user's is written, commits are deterministic and pinned, secrets
// and limits through take_snapshot(), store keys.
#include <catch2/catch.hpp>

#include "tests/unit/workspace_snapshot/snapshot_test_util.h"

using namespace snaptest;
using namespace lockroom::workspace::snapshot;
using lockroom::ErrorCode;

TEST_CASE("the user's .git and working tree are byte-for-byte unchanged by snapshots") {
  TempDir upstream, ws, store;
  {
    TestRepo lib(upstream.path());
    write_file(upstream / "lib.c", "int lib;\n");
    lib.commit_all();
  }
  TestRepo repo(ws.path());
  write_file(ws / "tracked.txt", "v1\n");
  write_file(ws / "same-size.txt", "aaaa\n");
  write_file(ws / ".gitignore", "*.log\n");
  repo.commit_all();
  git_submodule* sm = nullptr;
  REQUIRE(git_submodule_add_setup(&sm, repo.get(), upstream.path().c_str(), "lib", 1) == 0);
  git_repository* sub_repo = nullptr;
  REQUIRE(git_submodule_clone(&sub_repo, sm, nullptr) == 0);
  git_repository_free(sub_repo);
  REQUIRE(git_submodule_add_finalize(sm) == 0);
  git_submodule_free(sm);
  repo.commit_all();
  // Edits that make the index stale (same size, new content: libgit2 status would want to refresh
  // and rewrite the index), an untracked file, an ignored one, an edit inside the submodule.
  write_file(ws / "same-size.txt", "bbbb\n");
  write_file(ws / "tracked.txt", "v2, longer\n");
  write_file(ws / "untracked.txt", "new\n");
  write_file(ws / "debug.log", "ignored\n");
  write_file(ws / "lib/lib.c", "int lib2;\n");
  fs::remove(ws / ".gitignore");

  const auto before = fingerprint(ws.path());
  REQUIRE(before.count(".git/index"));
  REQUIRE(before.count(".git/modules/lib/index"));
  auto first = snap(ws.path(), store.path());
  auto second = snap(ws.path(), store.path());
  CHECK(fingerprint(ws.path()) == before);
  CHECK(first.commit_id == second.commit_id);
  auto files = snapshot_files(store.path(), first.commit_id);
  CHECK(files["same-size.txt"].content == "bbbb\n");
  CHECK(files["lib/lib.c"].content == "int lib2;\n");
  CHECK(files.count("debug.log") == 1);  // .gitignore is deleted in the working tree
}

TEST_CASE("a directory that is not a repository stays one") {
  TempDir ws, store;
  write_file(ws / "a.txt", "a\n");
  write_file(ws / ".gitignore", "*.o\n");
  const auto before = fingerprint(ws.path());
  snap(ws.path(), store.path());
  CHECK(fingerprint(ws.path()) == before);
  CHECK_FALSE(fs::exists(ws / ".git"));
}

TEST_CASE("the snapshot commit is deterministic, pinned by a ref, and releasable") {
  TempDir ws, store;
  write_file(ws / "a.txt", "a\n");
  SnapshotOptions options;
  options.snapshot_id = "sandbox-1";
  auto r = snap(ws.path(), store.path(), options);
  CHECK(r.snapshot_id == "sandbox-1");
  auto r2 = snap(ws.path(), store.path());
  CHECK(r2.commit_id == r.commit_id);
  CHECK(r2.snapshot_id == r.commit_id);

  auto repo = open_store(store.path());
  REQUIRE(repo.ok());
  git_oid pinned;
  REQUIRE(git_reference_name_to_id(&pinned, repo->get(), "refs/lockroom/snapshots/sandbox-1") == 0);
  CHECK(hex(pinned) == r.commit_id);
  git_commit* commit = nullptr;
  REQUIRE(git_commit_lookup(&commit, repo->get(), &pinned) == 0);
  CommitPtr owned(commit);
  CHECK(git_commit_parentcount(commit) == 0);
  CHECK(std::string(git_commit_author(commit)->name) == "lockroom");
  CHECK(std::string(git_commit_author(commit)->email) == "lockroom@localhost");
  CHECK(git_commit_time(commit) == 0);

  REQUIRE(release_snapshot(repo->get(), "sandbox-1").ok());
  CHECK(git_reference_name_to_id(&pinned, repo->get(), "refs/lockroom/snapshots/sandbox-1") == GIT_ENOTFOUND);
  CHECK(release_snapshot(repo->get(), "sandbox-1").ok());  // already gone: fine

  for (const char* bad : {"", "../x", "a/b", "-x", ".x", "x.lock", "a..b"}) {
    INFO(bad);
    options.snapshot_id = bad;
    if (!*bad) continue;  // empty means "the commit id"
    auto refused = take_snapshot(ws.path(), store.path(), options);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == ErrorCode::kInvalidInput);
  }
}

TEST_CASE("default secrets are withheld and listed, and allow puts a path back") {
  TempDir ws, store;
  write_file(ws / "app.py", "print()\n");
  write_file(ws / ".env", "API_KEY=1\n");
  write_file(ws / ".env.example", "API_KEY=\n");
  write_file(ws / "deploy/tls/server.key", "-----BEGIN PRIVATE KEY-----\n");
  write_file(ws / "home/.ssh/id_ed25519", "private\n");
  write_file(ws / "home/.ssh/id_ed25519.pub", "ssh-ed25519 AAAA\n");
  write_file(ws / "home/.aws/credentials", "[default]\n");
  write_file(ws / "config/README", "config\n");
  fs::create_symlink("../.env", ws / "config/.env.local");  // a symlink named like a secret is withheld too
  write_file(ws / "data/local.sqlite", "db\n");

  SnapshotOptions options;
  options.secrets.allow = {".env.example"};
  options.secrets.withhold = {"*.sqlite"};
  auto r = snap(ws.path(), store.path(), options);
  CHECK(r.withheld == std::vector<std::string>{".env", "config/.env.local", "data/local.sqlite", "deploy/tls/server.key",
                                               "home/.aws/credentials", "home/.ssh/id_ed25519"});
  CHECK(paths_of(snapshot_files(store.path(), r.commit_id)) ==
        std::vector<std::string>{".env.example", "app.py", "config/README", "home/.ssh/id_ed25519.pub"});
  CHECK(to_json(r)["withheld"].size() == 6);
}

TEST_CASE("each limit fails the snapshot with the offenders named, before anything is stored") {
  TempDir ws, store;
  write_file(ws / "big/video.mp4", std::string(5000, 'v'));
  write_file(ws / "big/photo.jpg", std::string(3000, 'p'));
  for (int i = 0; i < 12; ++i) write_file(ws / ("node_modules/m" + std::to_string(i) + ".js"), "x");
  write_file(ws / "src/main.c", "int main;\n");

  SnapshotOptions options;
  options.limits.max_file_bytes = 4000;
  auto one = take_snapshot(ws.path(), store.path(), options);
  REQUIRE_FALSE(one.ok());
  CHECK(one.error().code == ErrorCode::kLimitExceeded);
  CHECK(one.error().message.find("big/video.mp4 (4.9 KiB)") != std::string::npos);
  CHECK(one.error().message.find("photo.jpg") == std::string::npos);

  options.limits = {};
  options.limits.max_files = 10;
  auto count = take_snapshot(ws.path(), store.path(), options);
  REQUIRE_FALSE(count.ok());
  CHECK(count.error().code == ErrorCode::kLimitExceeded);
  INFO(count.error().message);
  CHECK(count.error().message.find("node_modules/") != std::string::npos);
  CHECK(count.error().message.find("more than the limit of 10 files") != std::string::npos);

  options.limits = {};
  options.limits.max_total_bytes = 6000;
  auto total = take_snapshot(ws.path(), store.path(), options);
  REQUIRE_FALSE(total.ok());
  CHECK(total.error().code == ErrorCode::kLimitExceeded);
  CHECK(total.error().message.find("big/video.mp4 (4.9 KiB), big/photo.jpg (2.9 KiB)") != std::string::npos);
  CHECK(total.error().message.find("big/ (7.8 KiB)") != std::string::npos);

  auto repo = open_store(store.path());
  REQUIRE(repo.ok());
  git_odb* odb = nullptr;
  REQUIRE(git_repository_odb(&odb, repo->get()) == 0);
  OdbPtr owned(odb);
  int objects = 0;
  git_odb_foreach(odb, [](const git_oid*, void* n) { return ++*static_cast<int*>(n), 0; }, &objects);
  CHECK(objects == 0);
}

TEST_CASE("a large file is streamed into the store intact") {
  TempDir ws, store;
  std::string big;
  for (int i = 0; i < (3 << 20) / 16; ++i) big += "0123456789abcde\n";
  write_file(ws / "big.txt", big);
  auto r = snap(ws.path(), store.path());
  auto files = snapshot_files(store.path(), r.commit_id);
  CHECK(files["big.txt"].content == big);
  CHECK(r.total_bytes == big.size());
}

TEST_CASE("store keys are stable per path and distinct across paths") {
  CHECK(workspace_store_key("/home/me/src/my-app") == workspace_store_key("/home/me/src/my-app/"));
  CHECK(workspace_store_key("/home/me/src/my-app") != workspace_store_key("/home/you/src/my-app"));
  CHECK(workspace_store_key("/home/me/src/my-app").rfind("my-app-", 0) == 0);
  CHECK(workspace_store_key("/home/me/src/my-app").size() == std::string("my-app-").size() + 16);
  CHECK(workspace_store_key("/").rfind("root-", 0) == 0);
  CHECK(workspace_store_key("/x/we ird.na$me").rfind("we_ird_na_me-", 0) == 0);
}

TEST_CASE("the result's JSON form") {
  SnapshotResult r;
  r.snapshot_id = "s1";
  r.commit_id = std::string(40, 'c');
  r.tree_id = std::string(40, 't');
  r.user_head = std::string(40, 'h');
  r.is_git_repo = true;
  r.file_count = 3;
  r.total_bytes = 42;
  r.skipped = {{"pipe", "named pipe (FIFO): not something git can store"}};
  r.timings = {12, 34};
  auto j = to_json(r);
  CHECK(j["commit"] == std::string(40, 'c'));
  CHECK(j["userHead"] == std::string(40, 'h'));
  CHECK_FALSE(j.contains("branch"));
  CHECK(j["isGitRepo"] == true);
  CHECK(j["fileCount"] == 3);
  CHECK(j["skipped"][0]["path"] == "pipe");
  CHECK(j["timings"]["scanMs"] == 12);
  CHECK(j["timings"]["storeMs"] == 34);
}
