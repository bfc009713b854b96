// The stat cache: unchanged files are not read again, but anything that may have changed is.
#include <catch2/catch.hpp>

#include "tests/unit/workspace_snapshot/snapshot_test_util.h"

using namespace snaptest;

TEST_CASE("files written just before a snapshot are read again next time (racy window)") {
  TempDir ws, store;
  for (int i = 0; i < 5; ++i) write_file(ws / ("f" + std::to_string(i)), std::to_string(i));
  auto first = snap(ws.path(), store.path());
  CHECK(first.files_read == 5);
  auto second = snap(ws.path(), store.path());
  CHECK(second.files_read == 5);  // written less than 2 s before the first scan: not trusted

  age_files(ws.path());
  auto third = snap(ws.path(), store.path());
  CHECK(third.files_read == 5);  // new mtimes
  auto fourth = snap(ws.path(), store.path());
  CHECK(fourth.files_read == 0);
  CHECK(fourth.commit_id == first.commit_id);
}

TEST_CASE("an edit that keeps the size and the old mtime is still seen (ctime)") {
  TempDir ws, store;
  write_file(ws / "a.txt", "aaaa\n");
  write_file(ws / "b.txt", "bbbb\n");
  age_files(ws.path());
  struct stat before {};
  REQUIRE(lstat((ws / "a.txt").c_str(), &before) == 0);
  auto first = snap(ws.path(), store.path());

  write_file(ws / "a.txt", "AAAA\n");
  const timespec times[2] = {before.st_atim, before.st_mtim};
  REQUIRE(utimensat(AT_FDCWD, (ws / "a.txt").c_str(), times, 0) == 0);  // mtime and size as before
  auto second = snap(ws.path(), store.path());
  CHECK(second.files_read == 1);
  CHECK(snapshot_files(store.path(), second.commit_id)["a.txt"].content == "AAAA\n");
}

TEST_CASE("mode changes, replacements and a lost cache are all noticed") {
  TempDir ws, store;
  write_file(ws / "run.sh", "echo\n");
  write_file(ws / "data", "x\n");
  age_files(ws.path());
  snap(ws.path(), store.path());

  REQUIRE(chmod((ws / "run.sh").c_str(), 0755) == 0);
  fs::remove(ws / "data");
  fs::create_symlink("run.sh", ws / "data");
  auto second = snap(ws.path(), store.path());
  auto files = snapshot_files(store.path(), second.commit_id);
  CHECK(files["run.sh"].mode == GIT_FILEMODE_BLOB_EXECUTABLE);
  CHECK(files["data"] == TreeFile{GIT_FILEMODE_LINK, "run.sh"});

  age_files(ws.path());
  snap(ws.path(), store.path());
  write_file(store / "lockroom-stat-cache", "not an index");  // e.g. cut short by a crash
  auto after_damage = snap(ws.path(), store.path());
  CHECK(after_damage.files_read == 2);
  CHECK(after_damage.commit_id == second.commit_id);
  CHECK(snap(ws.path(), store.path()).files_read == 0);  // the cache was rebuilt
}
