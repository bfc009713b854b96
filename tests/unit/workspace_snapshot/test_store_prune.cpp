// Workspace stores: which folder each is of, when it was last used, that a store a process holds
// is never removed (this one, or another), and what prune removes. Real stores made by
// take_snapshot() in a temp <cache>/workspaces.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include "server/workspace/snapshot/store_prune.h"
#include "server/workspace/snapshot/store_use.h"
#include "tests/unit/workspace_snapshot/snapshot_test_util.h"

using namespace snaptest;
using namespace lockroom::workspace::snapshot;
using namespace std::chrono_literals;
using Clock = std::chrono::system_clock;

namespace {

std::string str(const fs::path& p) { return p.string(); }

// A store for `workspace` where lockroom would put it: <workspaces>/<key>/store.git.
std::string store_of(const fs::path& workspaces, const std::string& workspace) {
  return str(fs::path(workspaces) / workspace_store_key(fs::canonical(workspace).string()) / "store.git");
}

const StoreListing* find(const std::vector<StoreListing>& stores, const std::string& workspace) {
  for (const auto& s : stores)
    if (s.workspace == fs::canonical(workspace).string()) return &s;
  return nullptr;
}

void set_mtime(const std::string& path, Clock::time_point when) {
  timespec times[2];
  times[0].tv_sec = Clock::to_time_t(when);
  times[0].tv_nsec = 0;
  times[1] = times[0];
  REQUIRE(utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW) == 0);
}

}  // namespace

TEST_CASE("should_prune: in use never; all; a gone folder; unused for long enough") {
  const auto now = Clock::now();
  StoreListing fresh;
  fresh.workspace = "/somewhere";
  fresh.workspace_exists = true;
  fresh.last_used = now - 24h;
  StoreListing old = fresh;
  old.last_used = now - 24h * 40;
  StoreListing orphan = fresh;
  orphan.workspace_exists = false;
  StoreListing unrecorded = fresh;  // made before stores recorded their folder
  unrecorded.workspace.reset();
  unrecorded.workspace_exists = false;

  const PruneRule by_default{std::chrono::hours(24 * 30), false, true};
  CHECK_FALSE(should_prune(fresh, by_default, now));
  CHECK(should_prune(old, by_default, now));
  CHECK(should_prune(orphan, by_default, now));
  CHECK_FALSE(should_prune(unrecorded, by_default, now));

  const PruneRule orphans_only{std::nullopt, false, true};
  CHECK_FALSE(should_prune(old, orphans_only, now));
  CHECK(should_prune(orphan, orphans_only, now));

  const PruneRule everything{std::nullopt, true, false};
  CHECK(should_prune(fresh, everything, now));
  for (StoreListing held : {fresh, old, orphan}) {
    held.in_use = true;
    CHECK_FALSE(should_prune(held, everything, now));
    CHECK_FALSE(should_prune(held, by_default, now));
  }
}

TEST_CASE("stores record their folder and last use; prune keeps held ones and removes by age, gone folder or all") {
  TempDir cache, kept_ws, gone_ws, old_ws;
  const fs::path workspaces = fs::path(str(cache.path())) / "workspaces";
  write_file(kept_ws / "a.txt", "kept\n");
  write_file(gone_ws / "b.txt", "gone\n");
  write_file(old_ws / "c.txt", "old\n");
  for (const TempDir* ws : {&kept_ws, &gone_ws, &old_ws}) snap(str(ws->path()), store_of(workspaces, str(ws->path())));
  REQUIRE(fs::create_directories(workspaces / ".x.removing-1/store.git"));  // an interrupted removal
  write_file(str(workspaces / "not-a-store/file"), "left alone\n");

  auto stores = list_stores(workspaces);
  REQUIRE(stores.size() == 3);
  for (const auto& s : stores) {
    INFO(s.key);
    CHECK(s.in_use);  // this process took the snapshots and still holds the stores
    CHECK(s.workspace_exists);
    CHECK(s.bytes > 0);
    CHECK(Clock::now() - s.last_used < 60s);
  }
  REQUIRE(find(stores, str(kept_ws.path())) != nullptr);

  // Held: nothing goes, even with `all`; each is reported as kept.
  auto held = prune_stores(workspaces, PruneRule{std::nullopt, true, false});
  CHECK(held.removed.empty());
  CHECK(held.kept_in_use.size() == 3);
  CHECK(held.errors.empty());
  CHECK_FALSE(fs::exists(workspaces / ".x.removing-1"));  // leftovers go anyway
  CHECK(fs::exists(workspaces / "not-a-store/file"));

  release_held_stores();
  fs::remove_all(str(gone_ws.path()));
  set_mtime(store_of(workspaces, str(old_ws.path())) + "/" + kStoreInUseFile, Clock::now() - 24h * 40);
  stores = list_stores(workspaces);
  CHECK_FALSE(find(stores, str(kept_ws.path()))->in_use);

  auto by_age = prune_stores(workspaces, PruneRule{std::chrono::hours(24 * 30), false, true});
  REQUIRE(by_age.removed.size() == 2);
  CHECK(by_age.removed[0].workspace.has_value());
  CHECK(by_age.errors.empty());
  CHECK(by_age.bytes_freed >= by_age.removed[0].bytes + by_age.removed[1].bytes);
  CHECK_FALSE(fs::exists(fs::path(store_of(workspaces, str(old_ws.path()))).parent_path()));
  stores = list_stores(workspaces);
  REQUIRE(stores.size() == 1);
  CHECK(stores[0].workspace == fs::canonical(str(kept_ws.path())).string());
  for (const auto& e : fs::directory_iterator(workspaces)) {
    INFO(e.path());
    CHECK((e.path().filename() == stores[0].key || e.path().filename() == "not-a-store"));  // nothing left aside
  }

  auto all = prune_stores(workspaces, PruneRule{std::nullopt, true, false});
  CHECK(all.removed.size() == 1);
  CHECK(list_stores(workspaces).empty());

  // The folder is snapshotted again: a new store, held again.
  snap(str(kept_ws.path()), store_of(workspaces, str(kept_ws.path())));
  CHECK(list_stores(workspaces).at(0).in_use);
  release_held_stores();
}

TEST_CASE("a store held by another process is not removed until that process ends") {
  TempDir cache, ws;
  const fs::path workspaces = fs::path(str(cache.path())) / "workspaces";
  write_file(ws / "a.txt", "a\n");
  const std::string store = store_of(workspaces, str(ws.path()));
  snap(str(ws.path()), store);
  release_held_stores();  // only the child holds it from here on

  int ready[2], finish[2];
  REQUIRE(pipe(ready) == 0);
  REQUIRE(pipe(finish) == 0);
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    close(ready[0]);
    close(finish[1]);
    char byte = hold_store(store) ? 'y' : 'n';
    if (write(ready[1], &byte, 1) != 1) _exit(2);
    (void)read(finish[0], &byte, 1);  // until the parent closes its end
    _exit(0);
  }
  close(ready[1]);
  close(finish[0]);
  char byte = 0;
  REQUIRE(read(ready[0], &byte, 1) == 1);
  CHECK(byte == 'y');

  auto stores = list_stores(workspaces);
  REQUIRE(stores.size() == 1);
  CHECK(stores[0].in_use);
  auto removed = remove_store(stores[0]);
  REQUIRE(removed.ok());
  CHECK_FALSE(*removed);
  CHECK(prune_stores(workspaces, PruneRule{std::nullopt, true, false}).kept_in_use.size() == 1);
  CHECK(fs::exists(store));

  close(finish[1]);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  close(ready[0]);
  auto after = prune_stores(workspaces, PruneRule{std::nullopt, true, false});
  CHECK(after.removed.size() == 1);
  CHECK_FALSE(fs::exists(store));
}
