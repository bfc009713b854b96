// Snapshot and restore error paths, with a stand-in "QEMU" (a shell script that only sleeps)
// and the scripted QMP peer answering on its socket: QEMU's refusals come back as clear errors,
// and a failed restore kills the VM and removes its state dir.
#include <catch2/catch.hpp>

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "server/vm/snapshot.h"
#include "server/vm/vm.h"
#include "tests/fakes/fake_qmp_peer.h"

using namespace lockroom;
using lockroom::testing::FakeQmpPeer;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

struct Rig {
  uv_loop_t loop;
  fs::path dir;
  std::unique_ptr<vm::Vm> vm;
  std::unique_ptr<FakeQmpPeer> peer;
  std::optional<Result<void>> ready;
  std::optional<vm::VmExit> exited;
  fs::path state_dir;

  Rig() {
    uv_loop_init(&loop);
    char tmpl[] = "/tmp/lockroom-snap-test-XXXXXX";
    dir = mkdtemp(tmpl);
    std::ofstream(dir / "fake-qemu") << "#!/bin/sh\nexec sleep 30\n";
    chmod((dir / "fake-qemu").c_str(), 0755);
    std::ofstream(dir / "device.state") << "not really QEMU state";
  }
  ~Rig() { fs::remove_all(dir); }

  vm::VmSpec spec(vm::RamMode ram) {
    vm::VmSpec s;
    s.qemu.qemu = (dir / "fake-qemu").string();
    s.qemu.kernel = dir / "kernel";
    s.qemu.initrd = dir / "initrd";
    s.qemu.ram = ram;
    s.qemu.ram_file = dir / "ram";
    s.state_root = dir / "state";
    s.boot_timeout = 5s;
    return s;
  }

  // Starts the VM, puts the fake QMP peer on its socket (the client retries until it is there).
  void start(vm::VmSpec s, std::function<void(Result<void>)> on_ready = nullptr) {
    vm::VmCallbacks cb;
    cb.on_ready = [this, on_ready](Result<void> r) {
      ready = r;
      if (on_ready) on_ready(r);
    };
    cb.on_exit = [this](const vm::VmExit& e) {
      exited = e;
      peer->close();
    };
    auto started = vm::Vm::start(&loop, std::move(s), cb);
    REQUIRE(started.ok());
    vm = std::move(*started);
    state_dir = vm->state_dir();
    peer = std::make_unique<FakeQmpPeer>(&loop, vm->paths().qmp_socket.string());
    REQUIRE(peer->listen());
  }

  int finish() {
    uv_run(&loop, UV_RUN_DEFAULT);
    vm.reset();
    peer.reset();
    uv_run(&loop, UV_RUN_DEFAULT);
    return uv_loop_close(&loop);
  }
};

vm::ReadinessCheck ready_at_once() {
  return [](vm::Vm&, std::function<void(Result<void>)> done) { done({}); };
}

}  // namespace

TEST_CASE("restore: QEMU refusing migrate-incoming fails the start with its reason, and the VM is killed", "[vm][snapshot]") {
  Rig rig;
  auto s = rig.spec(vm::RamMode::kRestore);
  s.readiness = vm::restore_readiness(rig.dir / "device.state", nullptr);
  rig.start(s);
  rig.peer->script("migrate-incoming", {FakeQmpPeer::Kind::kError, {{"class", "GenericError"}, {"desc", "no -incoming defer"}}});
  uv_run(&rig.loop, UV_RUN_DEFAULT);
  REQUIRE(rig.ready);
  REQUIRE_FALSE(rig.ready->ok());
  CHECK(rig.ready->error().message == "cannot restore the guest: QEMU refused migrate-incoming: no -incoming defer (GenericError)");
  REQUIRE(rig.exited);
  CHECK(rig.exited->requested);
  CHECK_FALSE(fs::exists(rig.state_dir));
  CHECK(rig.peer->commands() == std::vector<std::string>{"qmp_capabilities", "migrate-set-capabilities", "migrate-incoming"});
  CHECK(rig.finish() == 0);
}

TEST_CASE("restore: a state file missing is an error naming it", "[vm][snapshot]") {
  Rig rig;
  auto s = rig.spec(vm::RamMode::kRestore);
  s.readiness = vm::restore_readiness(rig.dir / "absent.state", nullptr);
  rig.start(s);
  uv_run(&rig.loop, UV_RUN_DEFAULT);
  REQUIRE(rig.ready);
  REQUIRE_FALSE(rig.ready->ok());
  CHECK(rig.ready->error().message.find("absent.state") != std::string::npos);
  CHECK(rig.finish() == 0);
}

TEST_CASE("snapshot: QEMU refusing migrate is reported, not hung on", "[vm][snapshot]") {
  Rig rig;
  auto s = rig.spec(vm::RamMode::kTemplate);
  s.readiness = ready_at_once();
  std::optional<Result<vm::SnapshotInfo>> saved;
  rig.start(s, [&](Result<void> r) {
    REQUIRE(r.ok());
    vm::save_snapshot(*rig.vm, rig.dir / "out.state", 2000ms, [&](Result<vm::SnapshotInfo> info) {
      saved = std::move(info);
      rig.vm->kill();
    });
  });
  rig.peer->script("migrate", {FakeQmpPeer::Kind::kError, {{"class", "GenericError"}, {"desc", "spawn is denied"}}});
  uv_run(&rig.loop, UV_RUN_DEFAULT);
  REQUIRE(saved);
  REQUIRE_FALSE(saved->ok());
  CHECK(saved->error().message == "cannot snapshot the template: QEMU refused migrate: spawn is denied (GenericError)");
  CHECK(rig.finish() == 0);
}

TEST_CASE("snapshot: a migration QEMU reports failed carries QEMU's description", "[vm][snapshot]") {
  Rig rig;
  auto s = rig.spec(vm::RamMode::kTemplate);
  s.readiness = ready_at_once();
  std::optional<Result<vm::SnapshotInfo>> saved;
  rig.start(s, [&](Result<void> r) {
    REQUIRE(r.ok());
    vm::save_snapshot(*rig.vm, rig.dir / "out.state", 2000ms, [&](Result<vm::SnapshotInfo> info) {
      saved = std::move(info);
      rig.vm->kill();
    });
  });
  rig.peer->script("query-migrate", {FakeQmpPeer::Kind::kReturn, {{"status", "failed"}, {"error-desc", "disk full"}}});
  uv_run(&rig.loop, UV_RUN_DEFAULT);
  REQUIRE(saved);
  REQUIRE_FALSE(saved->ok());
  CHECK(saved->error().message == "cannot snapshot the template: migration failed: disk full");
  CHECK(rig.finish() == 0);
}
