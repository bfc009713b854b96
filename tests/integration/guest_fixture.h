// What every integration test shares: the guest image (built once per run with the echo agent),
// a VmSpec for it under the accelerator lockroom would choose, one template booted and
// snapshotted ONCE per test executable, and a temporary state dir per test.
#pragma once

#include <filesystem>
#include <memory>

#include "server/vm/image/image_store.h"
#include "server/vm/vm.h"
#include "server/vm/vm_template.h"

namespace lockroom::testing {

const vm::image::GuestImage& test_image();
vm::VmSpec spec_for(const std::filesystem::path& state_root);
// Booted on first call (seconds under TCG); fails the calling test if the guest does not boot.
std::shared_ptr<vm::VmTemplate> shared_template();

struct TempState {
  std::filesystem::path dir;
  TempState();
  ~TempState();
};

}  // namespace lockroom::testing
