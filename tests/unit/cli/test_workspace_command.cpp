// `lockroom workspace ls|prune` through the real binary, on real stores made by take_snapshot in
// a cache of the test's own: the listing names each store's folder and whether it is gone; a
// prune removes the stores of folders that are gone and keeps recent ones; `--all` removes every
// store, but never one a running process holds (this test process, through hold_store).
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/common/subprocess.h"
#include "server/workspace/snapshot/snapshot.h"
#include "server/workspace/snapshot/snapshot_store.h"
#include "server/workspace/snapshot/store_use.h"
#include "tests/support/temp_dir.h"

using lockroom::testing::TempDir;
namespace fs = std::filesystem;
namespace snap = lockroom::workspace::snapshot;

namespace {

lockroom::ProcessOutput run_lockroom(const TempDir& home, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"env", "LOCKROOM_STATE_DIR=" + (home / "state").string(),
                                   "LOCKROOM_CACHE_DIR=" + (home / "cache").string(), "timeout", "30", LOCKROOM_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  auto ran = lockroom::run_capture(argv);
  INFO((ran ? std::string() : ran.error().message));
  REQUIRE(ran);
  return *ran;
}

// Snapshots `folder` into its store under <home>/cache/workspaces, as a sandbox would.
fs::path snapshot_into_cache(const TempDir& home, const fs::path& folder) {
  std::string real = fs::canonical(folder).string();
  fs::path store = home / "cache" / "workspaces" / snap::workspace_store_key(real) / "store.git";
  auto taken = snap::take_snapshot(real, store.string(), {});
  INFO((taken ? std::string() : taken.error().message));
  REQUIRE(taken);
  return store.parent_path();
}

}  // namespace

TEST_CASE("lockroom workspace ls and prune: stores of gone folders go, recent ones stay, held ones are never removed", "[cli][workspace]") {
  TempDir home("lockroom-cli-ws");
  home.write("kept/a.txt", "kept\n");
  home.write("gone/b.txt", "gone\n");
  fs::path kept = snapshot_into_cache(home, home / "kept");
  fs::path gone = snapshot_into_cache(home, home / "gone");
  snap::release_held_stores();  // this process is done with them
  fs::remove_all(home / "gone");

  auto listed = run_lockroom(home, {"workspace", "ls", "--json"});
  INFO(listed.output);
  REQUIRE(listed.exit_code == 0);
  auto stores = nlohmann::json::parse(listed.output);
  REQUIRE(stores.size() == 2);
  for (const auto& s : stores) {
    bool is_kept = s.at("path") == kept.string();
    CHECK(s.at("workspace") == fs::canonical(home.path()).string() + (is_kept ? "/kept" : "/gone"));
    CHECK(s.at("workspaceExists") == is_kept);
    CHECK(s.at("inUse") == false);
    CHECK(s.at("bytes").get<std::uint64_t>() > 0);
  }
  auto table = run_lockroom(home, {"workspace", "ls"});
  CHECK(table.exit_code == 0);
  CHECK_THAT(table.output, Catch::Contains("(gone)") && Catch::Contains("2 stores"));

  // The default prune: the gone folder's store goes, the recent one stays.
  auto pruned = run_lockroom(home, {"workspace", "prune"});
  INFO(pruned.output);
  CHECK(pruned.exit_code == 0);
  CHECK_THAT(pruned.output, Catch::Contains("removed 1 store"));
  CHECK_FALSE(fs::exists(gone));
  CHECK(fs::exists(kept / "store.git"));

  // --all, while this process holds the store: kept, and said so.
  REQUIRE(snap::hold_store((kept / "store.git").string()));
  auto held = run_lockroom(home, {"workspace", "prune", "--all"});
  INFO(held.output);
  CHECK(held.exit_code == 0);
  CHECK_THAT(held.output, Catch::Contains("a running lockroom uses it") && Catch::Contains("removed 0 stores"));
  CHECK(fs::exists(kept / "store.git"));

  snap::release_held_stores();
  auto all = run_lockroom(home, {"workspace", "prune", "--all"});
  CHECK(all.exit_code == 0);
  CHECK_FALSE(fs::exists(kept));
  auto empty = run_lockroom(home, {"workspace", "ls"});
  CHECK_THAT(empty.output, Catch::Contains("no workspace stores"));
}
