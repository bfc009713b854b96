// build_qemu_argv: the confined microvm command line, and its template/restore variants.
#include <catch2/catch.hpp>

#include <algorithm>

#include "server/vm/qemu_argv.h"

using namespace lockroom::vm;

namespace {

QemuConfig base() {
  QemuConfig c;
  c.kernel = "/cache/images/h/kernel";
  c.initrd = "/cache/images/h/initrd";
  c.state_dir = "/state/sb-1";
  c.kernel_cmdline = kernel_cmdline({});
  return c;
}

// The value following `flag`, or "" when absent; `nth` picks among repeated flags.
std::string after(const std::vector<std::string>& a, const std::string& flag, int nth = 0) {
  for (std::size_t i = 0; i + 1 < a.size(); ++i)
    if (a[i] == flag && nth-- == 0) return a[i + 1];
  return "";
}
bool has(const std::vector<std::string>& a, const std::string& s) { return std::find(a.begin(), a.end(), s) != a.end(); }

}  // namespace

TEST_CASE("argv: a confined microvm with console, channel and QMP in the state dir", "[vm][argv]") {
  auto argv = build_qemu_argv(base());
  REQUIRE(argv.ok());
  const auto& a = *argv;
  CHECK(a[0] == "qemu-system-x86_64");
  CHECK(after(a, "-M") == "microvm");
  CHECK(has(a, "-nodefaults"));
  CHECK(has(a, "-no-user-config"));
  CHECK(has(a, "-no-reboot"));
  CHECK(after(a, "-display") == "none");
  CHECK(after(a, "-serial") == "file:/state/sb-1/console.log");
  CHECK(after(a, "-qmp") == "unix:/state/sb-1/qmp.sock,server=on,wait=off");
  CHECK(after(a, "-chardev") == "socket,id=channel,path=/state/sb-1/channel.sock,server=on,wait=off");
  CHECK(after(a, "-device", 0) == "virtio-serial-device");
  CHECK(after(a, "-device", 1) == "virtserialport,chardev=channel,name=agent");
  CHECK(after(a, "-sandbox") == "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny");
  CHECK(after(a, "-m") == "256M");
  CHECK(after(a, "-smp") == "1");
  CHECK(after(a, "-accel") == "tcg,tb-size=64");
  CHECK_FALSE(has(a, "-incoming"));
  CHECK_FALSE(has(a, "-object"));
  for (const auto& arg : a) {
    CHECK(arg.find("-netdev") == std::string::npos);
    CHECK(arg.find("virtio-net") == std::string::npos);
    CHECK(arg.find("virtfs") == std::string::npos);
    CHECK(arg.find("9p") == std::string::npos);
  }
}

TEST_CASE("argv: TCG is multi-threaded with more than one vCPU, and KVM uses the host CPU", "[vm][argv]") {
  auto c = base();
  c.vcpus = 2;
  c.memory_mib = 512;
  auto a = *build_qemu_argv(c);
  CHECK(after(a, "-accel") == "tcg,thread=multi,tb-size=64");
  CHECK(after(a, "-smp") == "2");
  CHECK(after(a, "-m") == "512M");
  c.accel = Accel::kKvm;
  a = *build_qemu_argv(c);
  CHECK(after(a, "-accel") == "kvm");
  CHECK(after(a, "-cpu") == "host");
}

TEST_CASE("argv: a template shares its RAM file, and a restore maps it privately and waits", "[vm][argv]") {
  auto c = base();
  c.ram = RamMode::kTemplate;
  c.ram_file = "/dev/shm/lockroom-t,1";
  auto t = *build_qemu_argv(c);
  CHECK(after(t, "-M") == "microvm,memory-backend=mem");
  CHECK(after(t, "-object") == "memory-backend-file,id=mem,size=256M,mem-path=/dev/shm/lockroom-t,,1,share=on");
  CHECK_FALSE(has(t, "-incoming"));
  c.ram = RamMode::kRestore;
  auto r = *build_qemu_argv(c);
  CHECK(after(r, "-object") == "memory-backend-file,id=mem,size=256M,mem-path=/dev/shm/lockroom-t,,1,share=off");
  CHECK(after(r, "-incoming") == "defer");
  // Everything but RAM sharing and -incoming is identical, as migration requires.
  r.erase(std::find(r.begin(), r.end(), "-incoming"), r.end());
  CHECK(r.size() == t.size());
}

TEST_CASE("argv: bad values are refused with the value in the message", "[vm][argv]") {
  auto c = base();
  c.vcpus = 0;
  auto r = build_qemu_argv(c);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("got 0") != std::string::npos);
  c = base();
  c.memory_mib = 16;
  CHECK_FALSE(build_qemu_argv(c).ok());
  c = base();
  c.kernel = "relative/kernel";
  CHECK(build_qemu_argv(c).error().message.find("relative/kernel") != std::string::npos);
  c = base();
  c.ram = RamMode::kRestore;
  CHECK_FALSE(build_qemu_argv(c).ok());  // no RAM file
  c = base();
  c.channel_name = "a,b";
  CHECK_FALSE(build_qemu_argv(c).ok());
}

TEST_CASE("kernel command line: console, panic ends the VM, the channel for the agent", "[vm][argv]") {
  CHECK(kernel_cmdline({}) == "console=ttyS0 quiet panic=-1 lockroom.port=agent");
  KernelCmdlineOptions o;
  o.tsc_khz = 2445416;
  o.extra = {"lockroom.maxprocs=100"};
  CHECK(kernel_cmdline(o) == "console=ttyS0 quiet panic=-1 tsc_early_khz=2445416 tsc=reliable lockroom.port=agent lockroom.maxprocs=100");
}
