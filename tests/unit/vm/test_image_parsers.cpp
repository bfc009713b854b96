// The pure parsers behind the guest image: apt output, ldd output, the bzImage header, /init.
#include <catch2/catch.hpp>

#include "server/vm/image/init_script.h"
#include "server/vm/image/kernel_extract.h"
#include "server/vm/image/kernel_package.h"
#include "server/vm/image/shared_libs.h"

namespace img = lockroom::vm::image;

TEST_CASE("apt-cache depends names the versioned kernel package", "[vm][image]") {
  auto dep = img::parse_kernel_dependency("linux-image-amd64\n  Depends: linux-image-6.1.0-57-amd64\n");
  REQUIRE(dep);
  CHECK(dep->package == "linux-image-6.1.0-57-amd64");
  CHECK_FALSE(dep->version);
  CHECK(img::kernel_release_of(dep->package) == "6.1.0-57-amd64");
  auto pinned = img::parse_kernel_dependency(
      "Package: linux-image-amd64\nVersion: 6.1.192-3\nDepends: linux-image-6.1.0-57-amd64 (= 6.1.192-3), initramfs-tools\n");
  REQUIRE(pinned);
  CHECK(pinned->package == "linux-image-6.1.0-57-amd64");
  CHECK(pinned->version == std::optional<std::string>("6.1.192-3"));
  auto alt = img::parse_kernel_dependency("Depends: kmod, linux-image-6.1.0-9-cloud-amd64 | linux-image-x\n");
  REQUIRE(alt);
  CHECK(alt->package == "linux-image-6.1.0-9-cloud-amd64");
  CHECK_FALSE(img::parse_kernel_dependency("linux-image-amd64\n  Recommends: firmware\n"));
  CHECK(*img::parse_version_field("Package: x\nVersion: 6.1.192-3\nArch: amd64\n") == "6.1.192-3");
}

TEST_CASE("ldd output gives the libraries and the loader, without the vDSO", "[vm][image]") {
  auto libs = img::parse_ldd(
      "\tlinux-vdso.so.1 (0x00007ffd)\n"
      "\tlibstdc++.so.6 => /lib/x86_64-linux-gnu/libstdc++.so.6 (0x00007f1a)\n"
      "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f1b)\n"
      "\t/lib64/ld-linux-x86-64.so.2 (0x00007f1c)\n",
      "agent");
  REQUIRE(libs.ok());
  CHECK(*libs == std::vector<std::string>{"/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libstdc++.so.6",
                                          "/lib64/ld-linux-x86-64.so.2"});
  CHECK(img::parse_ldd("\tnot a dynamic executable\n", "busybox")->empty());
  auto missing = img::parse_ldd("\tlibfoo.so.1 => not found\n", "agent");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find("libfoo.so.1") != std::string::npos);
}

TEST_CASE("the bzImage header locates an xz payload", "[vm][image]") {
  std::string bz(4096, '\0');
  bz[0x1F1] = 1;  // one setup sector: the kernel proper starts at 1024
  bz.replace(0x202, 4, "HdrS");
  auto put32 = [&](std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) bz[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
  };
  put32(0x248, 100);  // payload_offset
  put32(0x24C, 8);    // payload_length
  bz.replace(1124, 6, std::string("\xFD" "7zXZ\0", 6));
  auto payload = img::bzimage_payload(bz);
  REQUIRE(payload.ok());
  CHECK(payload->format == "xz");
  CHECK(payload->bytes.size() == 8);
  put32(0x24C, 1u << 30);
  CHECK_FALSE(img::bzimage_payload(bz).ok());
  CHECK_FALSE(img::bzimage_payload("short").ok());
}

TEST_CASE("/init loads modules in order and execs the agent last", "[vm][image]") {
  std::string init = img::init_script("6.1.0-57-amd64", {{"virtio_ring", "kernel/drivers/virtio/virtio_ring.ko"},
                                                         {"virtio", "kernel/drivers/virtio/virtio.ko"}});
  auto ring = init.find("insmod /lib/modules/6.1.0-57-amd64/kernel/drivers/virtio/virtio_ring.ko");
  auto core = init.find("insmod /lib/modules/6.1.0-57-amd64/kernel/drivers/virtio/virtio.ko");
  REQUIRE(ring != std::string::npos);
  REQUIRE(core != std::string::npos);
  CHECK(ring < core);
  CHECK(init.find("mount -t devtmpfs") < ring);
  CHECK(init.rfind("exec /sbin/lockroom-agent") > core);
  CHECK(init.rfind("#!/bin/sh\n", 0) == 0);
}
