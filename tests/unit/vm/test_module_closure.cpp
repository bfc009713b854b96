// module_load_order: dependencies first, each once, errors that name the module.
#include <catch2/catch.hpp>

#include "server/vm/image/module_closure.h"

using lockroom::vm::image::module_load_order;
using lockroom::vm::image::module_name_of;

namespace {

// Lines as depmod writes them for Debian's 6.1 kernel (dependencies listed in any order).
const char* kDep =
    "kernel/drivers/virtio/virtio_ring.ko:\n"
    "kernel/drivers/char/virtio_console.ko: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko\n"
    "kernel/drivers/virtio/virtio_mmio.ko: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko\n"
    "kernel/drivers/virtio/virtio.ko: kernel/drivers/virtio/virtio_ring.ko\n"
    "kernel/fs/ext4/ext4.ko: kernel/fs/jbd2/jbd2.ko kernel/fs/mbcache.ko kernel/lib/crc16.ko\n"
    "kernel/fs/jbd2/jbd2.ko:\n"
    "kernel/fs/mbcache.ko:\n"
    "kernel/lib/crc16.ko:\n"
    "kernel/drivers/char/hw_random/virtio-rng.ko: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko\n";

std::vector<std::string> names(const std::vector<lockroom::vm::image::ModuleFile>& files) {
  std::vector<std::string> out;
  for (const auto& f : files) out.push_back(f.name);
  return out;
}

}  // namespace

TEST_CASE("module names drop the directory and .ko suffix and use underscores", "[vm][image]") {
  CHECK(module_name_of("kernel/drivers/char/virtio_console.ko") == "virtio_console");
  CHECK(module_name_of("virtio-rng.ko.xz") == "virtio_rng");
  CHECK(module_name_of("crc16") == "crc16");
}

TEST_CASE("the channel modules load ring, core, transport, console", "[vm][image]") {
  auto order = module_load_order({"virtio_ring", "virtio", "virtio_mmio", "virtio_console"}, kDep);
  REQUIRE(order.ok());
  CHECK(names(*order) == std::vector<std::string>{"virtio_ring", "virtio", "virtio_mmio", "virtio_console"});
  CHECK(order->front().path == "kernel/drivers/virtio/virtio_ring.ko");
}

TEST_CASE("dependencies come first even when only the leaf is asked for", "[vm][image]") {
  auto order = module_load_order({"virtio_console", "virtio_mmio"}, kDep);
  REQUIRE(order.ok());
  CHECK(names(*order) == std::vector<std::string>{"virtio_ring", "virtio", "virtio_console", "virtio_mmio"});
}

TEST_CASE("each module appears once", "[vm][image]") {
  auto order = module_load_order({"ext4", "crc16", "ext4", "virtio-rng"}, kDep);
  REQUIRE(order.ok());
  CHECK(names(*order) == std::vector<std::string>{"jbd2", "mbcache", "crc16", "ext4", "virtio_ring", "virtio", "virtio_rng"});
}

TEST_CASE("built-in modules are skipped", "[vm][image]") {
  auto order = module_load_order({"virtio_console"}, kDep, "kernel/drivers/virtio/virtio_ring.ko\n");
  REQUIRE(order.ok());
  CHECK(names(*order) == std::vector<std::string>{"virtio", "virtio_console"});
}

TEST_CASE("an unknown module is an error naming it and who wanted it", "[vm][image]") {
  auto missing = module_load_order({"nosuch"}, kDep);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find("\"nosuch\"") != std::string::npos);

  auto dangling = module_load_order({"a"}, "a.ko: b.ko\n");
  REQUIRE_FALSE(dangling.ok());
  CHECK(dangling.error().message.find("\"a\" depends on it") != std::string::npos);
}

TEST_CASE("a dependency cycle is an error, not a hang", "[vm][image]") {
  auto cycle = module_load_order({"a"}, "a.ko: b.ko\nb.ko: a.ko\n");
  REQUIRE_FALSE(cycle.ok());
  CHECK(cycle.error().message.find("cycle") != std::string::npos);
}
