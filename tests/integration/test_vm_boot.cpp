// Real guests under QEMU: the default image (with a stand-in echo agent) boots, answers on the
// channel, and QEMU being killed is seen as the guest dying, with the state dir gone.
#include <catch2/catch.hpp>

#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <iostream>

#include "server/common/paths.h"
#include "server/common/uv_handle.h"
#include "server/vm/accel.h"
#include "server/vm/host_tsc.h"
#include "server/vm/image/image_builder.h"
#include "server/vm/vm.h"

using namespace lockroom;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// The image is built once per test executable (a cache hit after the first run ever).
const vm::image::GuestImage& test_image() {
  static const vm::image::GuestImage image = [] {
    vm::image::ImageBuildOptions o;
    o.cache = default_paths().cache;
    o.agent = LOCKROOM_ECHO_AGENT;
    auto built = vm::image::ensure_image(o, [](const std::string& line) { std::cerr << "image: " << line << "\n"; });
    if (!built) FAIL("cannot build the guest image: " << built.error().message);
    return *built;
  }();
  return image;
}

vm::VmSpec spec_for(const fs::path& state_root) {
  const auto& image = test_image();
  vm::VmSpec spec;
  spec.state_root = state_root;
  spec.name = "itest";
  spec.qemu.accel = vm::choose_accel(vm::probe_host_virt(), vm::AccelPreference::kAuto).accel;
  spec.qemu.kernel = image.kernel();
  spec.qemu.initrd = image.initrd();
  vm::KernelCmdlineOptions k;
  if (spec.qemu.accel == vm::Accel::kTcg) k.tsc_khz = vm::host_tsc_khz();
  spec.qemu.kernel_cmdline = vm::kernel_cmdline(k);
  spec.boot_timeout = 90s;  // TCG on a busy 2-core host
  return spec;
}

struct TempState {
  fs::path dir;
  TempState() {
    char tmpl[] = "/tmp/lockroom-itest-XXXXXX";
    dir = mkdtemp(tmpl);
  }
  ~TempState() { fs::remove_all(dir); }
};

}  // namespace

TEST_CASE("a real guest boots, says ready on the channel, and a killed QEMU is detected", "[integration]") {
  TempState state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  {
    std::optional<Result<void>> ready;
    std::optional<vm::VmExit> exited;
    fs::path state_dir;
    std::unique_ptr<vm::Vm> guest;
    vm::VmCallbacks cb;
    cb.on_ready = [&](Result<void> r) {
      ready = r;
      if (r.ok()) {
        state_dir = guest->state_dir();
        CHECK(fs::exists(state_dir / "console.log"));
        CHECK((fs::status(state_dir).permissions() & fs::perms::all) == fs::perms::owner_all);
        // Something other than lockroom kills QEMU: the guest is gone, and it shows.
        kill(guest->pid(), SIGKILL);
      }
    };
    cb.on_exit = [&](const vm::VmExit& e) { exited = e; };
    auto started = vm::Vm::start(&loop, spec_for(state.dir), cb);
    REQUIRE(started.ok());
    guest = std::move(*started);
    CHECK(guest->state_dir().filename().string().rfind(std::to_string(getpid()) + "-", 0) == 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    REQUIRE(ready);
    INFO((ready->ok() ? "" : ready->error().message));
    REQUIRE(ready->ok());
    REQUIRE(exited);
    CHECK(exited->term_signal == SIGKILL);
    CHECK_FALSE(exited->requested);
    CHECK(exited->reason.find("signal 9") != std::string::npos);
    CHECK_FALSE(fs::exists(state_dir));
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK(uv_loop_close(&loop) == 0);
}

TEST_CASE("a guest that never becomes ready is a clear error, not a hang", "[integration]") {
  TempState state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  {
    auto spec = spec_for(state.dir);
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
