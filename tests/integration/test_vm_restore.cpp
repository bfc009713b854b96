// Sandboxes restored from the template: each answers, two run side by side, and QEMU being
// killed from outside is detected with the state dir gone.
#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <optional>

#include "tests/integration/echo_check.h"
#include "tests/integration/guest_fixture.h"

using namespace lockroom;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

struct Restored {
  std::unique_ptr<vm::Vm> vm;
  std::optional<Result<void>> ready;
  std::optional<vm::VmExit> exited;
  fs::path state_dir;
};

// Restores one sandbox; `on_ready` runs when it answered (or failed).
void restore(uv_loop_t* loop, const fs::path& state_root, Restored& r, std::function<void(Restored&)> on_ready) {
  auto spec = testing::shared_template()->restore_spec("restored", testing::echo_readiness());
  spec.state_root = state_root;
  vm::VmCallbacks cb;
  cb.on_ready = [&r, on_ready](Result<void> res) {
    r.ready = res;
    if (res.ok()) r.state_dir = r.vm->state_dir();
    on_ready(r);
  };
  cb.on_exit = [&r](const vm::VmExit& e) { r.exited = e; };
  auto started = vm::Vm::start(loop, spec, cb);
  REQUIRE(started.ok());
  r.vm = std::move(*started);
}

}  // namespace

TEST_CASE("a restored sandbox answers, and is gone with its state dir after kill", "[integration]") {
  testing::shared_template();  // boot outside the timed part
  testing::TempState state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  {
    Restored r;
    restore(&loop, state.dir, r, [](Restored& r) {
      if (r.ready->ok()) {
        CHECK((fs::status(r.state_dir).permissions() & fs::perms::all) == fs::perms::owner_all);
        CHECK(r.state_dir.filename().string().rfind(std::to_string(getpid()) + "-", 0) == 0);
      }
      r.vm->kill();
    });
    uv_run(&loop, UV_RUN_DEFAULT);
    REQUIRE(r.ready);
    INFO((r.ready->ok() ? std::string() : r.ready->error().message));
    REQUIRE(r.ready->ok());
    REQUIRE(r.exited);
    CHECK(r.exited->requested);
    CHECK_FALSE(fs::exists(r.state_dir));
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK(uv_loop_close(&loop) == 0);
}

TEST_CASE("two sandboxes restored from one template both answer", "[integration]") {
  testing::shared_template();
  testing::TempState state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  {
    Restored a, b;
    int answered = 0;
    auto both = [&](Restored&) {
      if (++answered == 2) {
        a.vm->kill();
        b.vm->kill();
      }
    };
    restore(&loop, state.dir, a, both);
    restore(&loop, state.dir, b, both);
    uv_run(&loop, UV_RUN_DEFAULT);
    REQUIRE(a.ready);
    REQUIRE(b.ready);
    CHECK(a.ready->ok());
    CHECK(b.ready->ok());
    CHECK(a.state_dir != b.state_dir);
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK(uv_loop_close(&loop) == 0);
}

TEST_CASE("QEMU killed from outside is detected: the reason names the signal, the state is gone", "[integration]") {
  testing::shared_template();
  testing::TempState state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  {
    Restored r;
    restore(&loop, state.dir, r, [](Restored& r) {
      if (r.ready->ok()) ::kill(r.vm->pid(), SIGKILL);
      else r.vm->kill();
    });
    uv_run(&loop, UV_RUN_DEFAULT);
    REQUIRE(r.ready);
    REQUIRE(r.ready->ok());
    REQUIRE(r.exited);
    CHECK_FALSE(r.exited->requested);
    CHECK(r.exited->term_signal == SIGKILL);
    CHECK(r.exited->reason.find("signal 9") != std::string::npos);
    CHECK_FALSE(fs::exists(r.state_dir));
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK(uv_loop_close(&loop) == 0);
}

TEST_CASE("destroying a Vm while its guest runs ends QEMU and deletes the state dir", "[integration]") {
  testing::shared_template();
  testing::TempState state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  {
    Restored r;
    int pid = 0;
    restore(&loop, state.dir, r, [&pid](Restored& r) {
      pid = r.vm->pid();
      r.vm.reset();  // from inside on_ready: allowed
    });
    uv_run(&loop, UV_RUN_DEFAULT);
    REQUIRE(r.ready);
    REQUIRE(r.ready->ok());
    CHECK_FALSE(r.exited);  // destroyed, not exited: no callback into a dead owner
    REQUIRE(pid > 0);
    CHECK(::kill(pid, 0) != 0);
    CHECK_FALSE(fs::exists(r.state_dir));
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK(uv_loop_close(&loop) == 0);
}
