// The shared integration-test fixture; see guest_fixture.h.
#include "tests/integration/guest_fixture.h"

#include <stdlib.h>

#include <iostream>

#include <catch2/catch.hpp>

#include "server/common/paths.h"
#include "server/vm/accel.h"
#include "server/vm/host_tsc.h"
#include "server/vm/image/image_builder.h"

namespace lockroom::testing {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

TempState::TempState() {
  char tmpl[] = "/tmp/lockroom-itest-XXXXXX";
  dir = mkdtemp(tmpl);
}
TempState::~TempState() { fs::remove_all(dir); }

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
  spec.boot_timeout = 120s;  // TCG on a busy 2-core host
  return spec;
}

std::shared_ptr<vm::VmTemplate> shared_template() {
  static TempState state;  // made before the template, so destroyed after it (statics unwind in reverse)
  static std::shared_ptr<vm::VmTemplate> tpl;
  static std::string failure;
  if (!tpl && failure.empty()) {
    uv_loop_t loop;
    uv_loop_init(&loop);
    vm::VmTemplate::create(&loop, spec_for(state.dir), [&](Result<std::shared_ptr<vm::VmTemplate>> r) {
      if (r) tpl = *r;
      else failure = r.error().message;
    });
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_run(&loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&loop) != 0) failure = "the template left handles open";
    if (tpl)
      std::cerr << "template: booted in " << tpl->boot_time().count() << " ms, snapshot " << tpl->snapshot().state_bytes
                << " bytes in " << tpl->snapshot().took.count() << " ms\n";
  }
  if (!tpl) FAIL("cannot make the template: " << failure);
  return tpl;
}

}  // namespace lockroom::testing
