// CpioArchive: byte-identical output for the same entries; round-trips through cpio(1) when the
// host has it, and through a header parser always.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "server/common/subprocess.h"
#include "server/vm/image/cpio_writer.h"

using lockroom::vm::image::CpioArchive;
namespace fs = std::filesystem;

namespace {

struct Parsed {
  std::uint32_t mode;
  std::uint32_t mtime;
  std::string data;
};

// A minimal newc reader, independent of the writer.
std::map<std::string, Parsed> parse(const std::string& bytes) {
  std::map<std::string, Parsed> out;
  std::size_t at = 0;
  auto field = [&](int i) { return static_cast<std::uint32_t>(std::stoul(bytes.substr(at + 6 + i * 8, 8), nullptr, 16)); };
  auto align = [](std::size_t n) { return (n + 3) & ~std::size_t{3}; };
  for (;;) {
    REQUIRE(bytes.compare(at, 6, "070701") == 0);
    std::uint32_t mode = field(1), mtime = field(5), size = field(6), namesize = field(11);
    std::string name = bytes.substr(at + 110, namesize - 1);
    std::size_t data_at = align(at + 110 + namesize);
    if (name == "TRAILER!!!") break;
    out[name] = Parsed{mode, mtime, bytes.substr(data_at, size)};
    at = align(data_at + size);
  }
  return out;
}

CpioArchive sample() {
  CpioArchive a;
  REQUIRE(a.add_file("bin/busybox", std::string("\x7f" "ELF\0binary", 10), 0755).ok());
  REQUIRE(a.add_symlink("bin/sh", "busybox").ok());
  REQUIRE(a.add_file("init", "#!/bin/sh\necho hi\n", 0755).ok());
  REQUIRE(a.add_directory("tmp", 01777).ok());
  REQUIRE(a.add_file("lib/modules/6.1/kernel/virtio.ko", "odd-sized", 0644).ok());
  return a;
}

}  // namespace

TEST_CASE("cpio: the same entries give byte-identical archives, in any insertion order", "[vm][image]") {
  CpioArchive reversed;
  REQUIRE(reversed.add_file("lib/modules/6.1/kernel/virtio.ko", "odd-sized", 0644).ok());
  REQUIRE(reversed.add_directory("tmp", 01777).ok());
  REQUIRE(reversed.add_file("init", "#!/bin/sh\necho hi\n", 0755).ok());
  REQUIRE(reversed.add_symlink("bin/sh", "busybox").ok());
  REQUIRE(reversed.add_file("bin/busybox", std::string("\x7f" "ELF\0binary", 10), 0755).ok());
  CHECK(sample().bytes() == reversed.bytes());
  CHECK(sample().bytes().size() % 4 == 0);
}

TEST_CASE("cpio: headers carry modes, sizes, mtime 0 and implied parent directories", "[vm][image]") {
  auto entries = parse(sample().bytes());
  REQUIRE(entries.count("lib"));
  CHECK(S_ISDIR(entries["lib/modules/6.1/kernel"].mode));
  CHECK(entries["tmp"].mode == (S_IFDIR | 01777));
  CHECK(entries["init"].mode == (S_IFREG | 0755));
  CHECK(entries["init"].data == "#!/bin/sh\necho hi\n");
  CHECK(entries["bin/busybox"].data.size() == 10);
  CHECK(S_ISLNK(entries["bin/sh"].mode));
  CHECK(entries["bin/sh"].data == "busybox");
  for (const auto& [name, e] : entries) CHECK(e.mtime == 0);
}

TEST_CASE("cpio: bad paths and duplicates are refused", "[vm][image]") {
  CpioArchive a;
  CHECK_FALSE(a.add_file("/init", "x").ok());
  CHECK_FALSE(a.add_file("a/../b", "x").ok());
  CHECK_FALSE(a.add_file("a//b", "x").ok());
  CHECK_FALSE(a.add_file("", "x").ok());
  REQUIRE(a.add_file("init", "x").ok());
  CHECK_FALSE(a.add_file("init", "y").ok());
  CHECK_FALSE(a.add_file("init/child", "y").ok());
  CHECK(a.add_directory("d").ok());
  CHECK(a.add_directory("d").ok());
}

TEST_CASE("cpio: the system cpio -i unpacks the archive to the same files", "[vm][image]") {
  if (!lockroom::find_program("cpio")) {
    WARN("cpio is not installed; the header parser test covers the format");
    return;
  }
  char tmpl[] = "/tmp/lockroom-cpio-test-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  fs::path dir = tmpl;
  {
    std::ofstream(dir / "archive.cpio", std::ios::binary) << sample().bytes();
  }
  fs::create_directory(dir / "out");
  auto run = lockroom::run_capture({"sh", "-c", "cd '" + (dir / "out").string() + "' && cpio -i --quiet -d < ../archive.cpio"});
  REQUIRE(run.ok());
  INFO(run->output);
  REQUIRE(run->exit_code == 0);
  std::ifstream init(dir / "out/init", std::ios::binary);
  std::stringstream text;
  text << init.rdbuf();
  CHECK(text.str() == "#!/bin/sh\necho hi\n");
  CHECK(fs::is_symlink(dir / "out/bin/sh"));
  CHECK(fs::read_symlink(dir / "out/bin/sh") == "busybox");
  CHECK(fs::file_size(dir / "out/lib/modules/6.1/kernel/virtio.ko") == 9);
  CHECK((fs::status(dir / "out/init").permissions() & fs::perms::owner_exec) != fs::perms::none);
  fs::remove_all(dir);
}
