// sandbox.json records and `lockroom kill`'s safety check, with real files and real processes.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "server/core/sandbox_registry.h"
#include "server/vm/vm.h"

using namespace lockroom;
using namespace lockroom::core;
namespace fs = std::filesystem;

namespace {

struct TempRoot {
  fs::path dir;
  TempRoot() {
    // mkdtemp fills in the XXXXXX; $TMPDIR is honoured.
    std::string tmpl = (std::filesystem::temp_directory_path() / "lockroom-registry-XXXXXX").string();
    dir = mkdtemp(tmpl.data());
    fs::create_directories(vm::vm_state_root(dir));
  }
  ~TempRoot() { fs::remove_all(dir); }
  fs::path vm_dir(const std::string& name) {
    fs::path d = vm::vm_state_root(dir) / name;
    fs::create_directories(d);
    return d;
  }
};

SandboxRecord record(const std::string& id, const fs::path& dir, int qemu_pid, std::int64_t created) {
  SandboxRecord r;
  r.id = id;
  r.owner_pid = static_cast<int>(getpid());
  r.qemu_pid = qemu_pid;
  r.created_unix_ms = created;
  r.accel = "tcg";
  r.limits.cpus = 2;
  r.limits.memory_mib = 768;
  r.state_dir = dir;
  return r;
}

// A child whose command line names `marker` (as QEMU's names its state dir), sleeping.
pid_t spawn_sleeper(const std::string& marker) {
  pid_t pid = fork();
  if (pid == 0) {
    execlp("sh", "sh", "-c", "sleep 30", marker.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  usleep(50000);  // let exec happen so /proc/PID/cmdline is the new one
  return pid;
}

}  // namespace

TEST_CASE("a sandbox record round-trips through JSON and a file", "[registry]") {
  TempRoot root;
  auto r = record("sb-abc123", root.vm_dir("1-1-sandbox"), 4242, 1700000000123);
  REQUIRE(write_sandbox_record(r).ok());
  auto records = read_sandbox_records(root.dir);
  REQUIRE(records.size() == 1);
  CHECK(records[0].id == "sb-abc123");
  CHECK(records[0].qemu_pid == 4242);
  CHECK(records[0].created_unix_ms == 1700000000123);
  CHECK(records[0].limits.cpus == 2);
  CHECK(records[0].limits.memory_mib == 768);
  CHECK(records[0].state_dir == r.state_dir);
  CHECK((fs::status(r.state_dir / "sandbox.json").permissions() & fs::perms::others_read) == fs::perms::none);
}

TEST_CASE("records that do not parse are skipped, the rest come sorted by age", "[registry]") {
  TempRoot root;
  REQUIRE(write_sandbox_record(record("sb-new", root.vm_dir("1-2-sandbox"), 11, 2000)).ok());
  REQUIRE(write_sandbox_record(record("sb-old", root.vm_dir("1-1-sandbox"), 10, 1000)).ok());
  std::ofstream(root.vm_dir("1-3-sandbox") / "sandbox.json") << "{\"id\": 7";
  std::ofstream(root.vm_dir("1-4-sandbox") / "sandbox.json") << R"({"id":"sb-x","ownerPid":-1,"qemuPid":5,"createdUnixMs":1})";
  auto records = read_sandbox_records(root.dir);
  REQUIRE(records.size() == 2);
  CHECK(records[0].id == "sb-old");
  CHECK(records[1].id == "sb-new");
  CHECK_FALSE(record_from_json("[1,2]"));
  CHECK_FALSE(record_from_json(""));
}

TEST_CASE("a sandbox is found by its id or an unambiguous prefix", "[registry]") {
  std::vector<SandboxRecord> records = {record("sb-a1b2c3", "/x", 1, 1), record("sb-a1ffff", "/y", 2, 2)};
  CHECK(find_sandbox_record(records, "sb-a1b2c3")->id == "sb-a1b2c3");
  CHECK(find_sandbox_record(records, "sb-a1b")->id == "sb-a1b2c3");
  auto ambiguous = find_sandbox_record(records, "sb-a1");
  REQUIRE_FALSE(ambiguous.ok());
  CHECK(ambiguous.error().message.find("more than one") != std::string::npos);
  auto missing = find_sandbox_record(records, "sb-zz");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == ErrorCode::kNotFound);
}

TEST_CASE("kill refuses a pid whose command line does not name the sandbox's state dir", "[registry]") {
  TempRoot root;
  fs::path dir = root.vm_dir("1-1-sandbox");
  pid_t unrelated = spawn_sleeper("something-else");
  auto killed = kill_sandbox(record("sb-1", dir, unrelated, 1), 99);
  REQUIRE_FALSE(killed.ok());
  CHECK(killed.error().code == ErrorCode::kNotFound);
  CHECK(::kill(unrelated, 0) == 0);  // still running: a reused pid is never killed
  CHECK_FALSE(fs::exists(vm::kill_request_path(dir)));
  ::kill(unrelated, SIGKILL);
  waitpid(unrelated, nullptr, 0);
}

TEST_CASE("kill marks the state dir with the requester and kills the named process", "[registry]") {
  TempRoot root;
  fs::path dir = root.vm_dir("1-1-sandbox");
  pid_t qemu = spawn_sleeper(dir.string() + "/qmp.sock");
  REQUIRE(kill_sandbox(record("sb-1", dir, qemu, 1), 4321).ok());
  int status = 0;
  REQUIRE(waitpid(qemu, &status, 0) == qemu);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  std::ifstream marker(vm::kill_request_path(dir));
  int requester = 0;
  marker >> requester;
  CHECK(requester == 4321);
}
