// Orphan sweeping removes only state dirs lockroom made whose owner is gone.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "server/vm/orphans.h"

using namespace lockroom::vm;
namespace fs = std::filesystem;

TEST_CASE("orphans: the owner pid comes from names lockroom makes, and only those", "[vm][orphans]") {
  CHECK(owner_pid_of("4242-3-sandbox") == 4242);
  CHECK(owner_pid_of("77-1") == 77);
  CHECK_FALSE(owner_pid_of("notes"));
  CHECK_FALSE(owner_pid_of("-1-x"));
  CHECK_FALSE(owner_pid_of("12a-1"));
  CHECK_FALSE(owner_pid_of("0-1-x"));
  CHECK_FALSE(owner_pid_of("12345678901-1-x"));
}

TEST_CASE("orphans: dead owners' dirs go, live owners' and foreign files stay", "[vm][orphans]") {
  char tmpl[] = "/tmp/lockroom-orphans-XXXXXX";
  fs::path root = mkdtemp(tmpl);
  for (const char* d : {"vms/100-1-a", "vms/200-2-b", "vms/keep-me", "templates/100-1"}) fs::create_directories(root / d);
  std::ofstream(root / "vms/100-1-a/console.log") << "x";
  auto report = sweep_orphans(root, [](int pid) { return pid == 200; });
  CHECK_FALSE(fs::exists(root / "vms/100-1-a"));
  CHECK_FALSE(fs::exists(root / "templates/100-1"));
  CHECK(fs::exists(root / "vms/200-2-b"));
  CHECK(fs::exists(root / "vms/keep-me"));
  CHECK(report.removed_dirs.size() == 2);
  CHECK(report.killed_qemu_pids.empty());
  fs::remove_all(root);
}
