// Real guests booting from the built image: the template boots and snapshots; a guest that never
// becomes ready is a clear error, not a hang.
#include <catch2/catch.hpp>

#include <optional>

#include "tests/integration/guest_fixture.h"

using namespace lockroom;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

TEST_CASE("the built image boots, answers on the channel, and snapshots as a template", "[integration]") {
  auto tpl = testing::shared_template();
  CHECK(tpl->boot_time() > 0ms);
  // Device state only (x-ignore-shared): tens of KB, not the guest's RAM.
  CHECK(tpl->snapshot().state_bytes > 1000);
  CHECK(tpl->snapshot().state_bytes < 4u * 1024 * 1024);
}

TEST_CASE("a guest that never becomes ready is a clear error, not a hang", "[integration]") {
  testing::TempState state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  {
    auto spec = testing::spec_for(state.dir);
    spec.boot_timeout = 1500ms;  // far too short for any boot here: the watchdog must fire
    std::optional<Result<void>> ready;
    std::optional<vm::VmExit> exited;
    vm::VmCallbacks cb;
    cb.on_ready = [&](Result<void> r) { ready = r; };
    cb.on_exit = [&](const vm::VmExit& e) { exited = e; };
    auto started = vm::Vm::start(&loop, spec, cb);
    REQUIRE(started.ok());
    auto guest = std::move(*started);
    uv_run(&loop, UV_RUN_DEFAULT);
    REQUIRE(ready);
    REQUIRE_FALSE(ready->ok());
    CHECK(ready->error().message.find("did not become ready within") != std::string::npos);
    REQUIRE(exited);
    CHECK(exited->requested);
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK(uv_loop_close(&loop) == 0);
}
