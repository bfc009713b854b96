// The package layer (package_layer.h): real unpacked package trees in a temp dir over a base
// initrd made with CpioArchive; the layer's cpio read back entry by entry.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "server/vm/image/cpio_writer.h"
#include "server/vm/image/package_layer.h"

namespace img = lockroom::vm::image;
namespace fs = std::filesystem;

namespace {

struct TempTree {
  fs::path root;
  TempTree() {
    std::string pattern = (fs::temp_directory_path() / "lockroom-layer-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    root = pattern;
  }
  ~TempTree() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  void file(const std::string& path, const std::string& data, mode_t mode = 0644) {
    fs::create_directories((root / path).parent_path());
    std::ofstream(root / path, std::ios::binary) << data;
    REQUIRE(chmod((root / path).c_str(), mode) == 0);
  }
  void link(const std::string& path, const std::string& target) {
    fs::create_directories((root / path).parent_path());
    fs::create_symlink(target, root / path);
  }
  void dir(const std::string& path, mode_t mode) {
    fs::create_directories(root / path);
    REQUIRE(chmod((root / path).c_str(), mode) == 0);
  }
};

// A base like the default image's: busybox with applet links, a host library, /init, /tmp.
img::BaseIndex base_index() {
  img::CpioArchive base;
  REQUIRE(base.add_file("bin/busybox", "BUSYBOX", 0755).ok());
  REQUIRE(base.add_symlink("bin/sh", "busybox").ok());
  REQUIRE(base.add_symlink("bin/ls", "busybox").ok());
  REQUIRE(base.add_file("lib/x86_64-linux-gnu/libc.so.6", "HOST LIBC", 0755).ok());
  REQUIRE(base.add_file("init", "#!/bin/sh\n", 0755).ok());
  REQUIRE(base.add_directory("tmp", 01777).ok());
  REQUIRE(base.add_directory("root", 0700).ok());
  REQUIRE(base.add_symlink("var/run", "../run").ok());
  auto index = img::read_initrd_index(base.bytes());
  REQUIRE(index.ok());
  return *index;
}

std::string file_data(const img::CpioArchive& archive, const std::string& path) {
  // The layer's own bytes, read back with a tiny independent newc walk.
  std::string b = archive.bytes();
  std::size_t at = 0;
  auto field = [&](int i) { return static_cast<std::size_t>(std::stoul(b.substr(at + 6 + i * 8, 8), nullptr, 16)); };
  while (b.compare(at, 6, "070701") == 0) {
    std::size_t size = field(6), name_size = field(11);
    std::string name = b.substr(at + 110, name_size - 1);
    std::size_t data_at = (at + 110 + name_size + 3) & ~std::size_t{3};
    if (name == path) return b.substr(data_at, size);
    if (name == "TRAILER!!!") break;
    at = (data_at + size + 3) & ~std::size_t{3};
  }
  return "<absent>";
}

}  // namespace

TEST_CASE("initrd index: paths, types and link targets of a newc archive; damage is refused", "[vm][packages]") {
  auto index = base_index();
  REQUIRE(index.count("bin/busybox"));
  CHECK(S_ISREG(index["bin/busybox"].mode));
  CHECK(S_ISLNK(index["bin/sh"].mode));
  CHECK(index["bin/sh"].target == "busybox");
  CHECK(S_ISDIR(index["bin"].mode));  // parents the writer added
  CHECK((index["tmp"].mode & 07777) == 01777);

  img::CpioArchive a;
  REQUIRE(a.add_file("x", "data").ok());
  std::string bytes = a.bytes();
  CHECK_FALSE(img::read_initrd_index(bytes.substr(0, bytes.size() - 20)).ok());
  CHECK_FALSE(img::read_initrd_index("not a cpio").ok());
  std::string bad_hex = bytes;
  bad_hex[6 + 8 + 2] = 'z';  // inside the mode field
  CHECK_FALSE(img::read_initrd_index(bad_hex).ok());
}

TEST_CASE("package layer: files, links and modes go in; documentation and runtime places stay out", "[vm][packages]") {
  TempTree jq;
  jq.file("usr/bin/jq", "JQ", 0755);
  jq.file("usr/lib/x86_64-linux-gnu/libjq.so.1.0.4", "LIBJQ", 0644);
  jq.link("usr/lib/x86_64-linux-gnu/libjq.so.1", "libjq.so.1.0.4");
  jq.file("usr/bin/setuid-helper", "S", 04755);
  jq.file("usr/share/doc/jq/copyright", "MIT");
  jq.file("usr/share/doc/jq/README.gz", "readme");
  jq.file("usr/share/man/man1/jq.1.gz", "man");
  jq.file("run/jq.pid", "1");
  auto layer = img::plan_package_layer({{"jq", jq.root}}, base_index());
  REQUIRE(layer.ok());
  auto index = img::read_initrd_index(layer->archive.bytes());
  REQUIRE(index.ok());
  CHECK(file_data(layer->archive, "usr/bin/jq") == "JQ");
  CHECK(((*index)["usr/bin/jq"].mode & 07777) == 0755);
  CHECK(((*index)["usr/bin/setuid-helper"].mode & 07777) == 04755);
  CHECK((*index)["usr/lib/x86_64-linux-gnu/libjq.so.1"].target == "libjq.so.1.0.4");
  CHECK(file_data(layer->archive, "usr/share/doc/jq/copyright") == "MIT");
  CHECK_FALSE(index->count("usr/share/doc/jq/README.gz"));
  CHECK_FALSE(index->count("usr/share/man/man1/jq.1.gz"));
  CHECK_FALSE(index->count("run/jq.pid"));
  CHECK(layer->files == 5);
  REQUIRE(layer->unpacked.size() == 1);
  CHECK(layer->unpacked[0].installed_bytes == 2 + 5 + std::string("libjq.so.1.0.4").size() + 1 + 3);
  CHECK(layer->base_kept.empty());
}

TEST_CASE("package layer: the base's files win, busybox applets give way (not sh), base directories keep their modes", "[vm][packages]") {
  TempTree libc, coreutils, odd;
  libc.file("lib/x86_64-linux-gnu/libc.so.6", "APT LIBC", 0755);
  libc.file("lib/x86_64-linux-gnu/libm.so.6", "APT LIBM", 0644);
  coreutils.file("bin/ls", "GNU LS", 0755);
  coreutils.file("bin/sh", "NOT BUSYBOX", 0755);
  coreutils.file("bin/busybox", "OTHER", 0755);
  odd.dir("tmp", 0755);
  odd.dir("root", 0755);
  odd.file("root/.profile", "PS1=x", 0644);
  odd.file("var/run/odd.sock", "x");     // under a link of the base
  odd.file("init", "#!/bin/bash\n", 0755);
  auto layer = img::plan_package_layer({{"libc6", libc.root}, {"coreutils", coreutils.root}, {"odd", odd.root}}, base_index());
  REQUIRE(layer.ok());
  auto index = img::read_initrd_index(layer->archive.bytes());
  REQUIRE(index.ok());

  CHECK_FALSE(index->count("lib/x86_64-linux-gnu/libc.so.6"));  // the host's copy stays
  CHECK(file_data(layer->archive, "lib/x86_64-linux-gnu/libm.so.6") == "APT LIBM");
  CHECK(file_data(layer->archive, "bin/ls") == "GNU LS");       // an applet link replaced
  CHECK_FALSE(index->count("bin/sh"));
  CHECK_FALSE(index->count("bin/busybox"));
  CHECK_FALSE(index->count("init"));
  CHECK_FALSE(index->count("var/run/odd.sock"));
  CHECK(file_data(layer->archive, "root/.profile") == "PS1=x");
  // Directories the base has: the base's modes, whatever the package or the implied parent says.
  CHECK(((*index)["root"].mode & 07777) == 0700);
  CHECK_FALSE(index->count("tmp"));  // tmp/ is a runtime place: left out whole
  CHECK(((*index)["bin"].mode & 07777) == 0755);
  CHECK(layer->base_kept == std::vector<std::string>{"libc6", "coreutils", "odd"});
  // libc.so.6, bin/sh, bin/busybox, init, and var/run (a folder in the package, a link in the base).
  CHECK(layer->paths_kept_from_base == 5);
}

TEST_CASE("package layer: a path two packages ship is taken from the first; a file under another's file is left out", "[vm][packages]") {
  TempTree first, second;
  first.file("usr/share/common/data", "FIRST");
  first.file("usr/lib/plugin", "A FILE");
  second.file("usr/share/common/data", "SECOND");
  second.file("usr/lib/plugin/inside", "NESTED");
  second.file("usr/share/common/other", "OTHER");
  auto layer = img::plan_package_layer({{"first", first.root}, {"second", second.root}}, base_index());
  REQUIRE(layer.ok());
  CHECK(file_data(layer->archive, "usr/share/common/data") == "FIRST");
  CHECK(file_data(layer->archive, "usr/share/common/other") == "OTHER");
  CHECK(file_data(layer->archive, "usr/lib/plugin") == "A FILE");
  CHECK(file_data(layer->archive, "usr/lib/plugin/inside") == "<absent>");
  CHECK(layer->paths_left_out == 3);  // the second data, the second plugin folder, and what is inside it
}

TEST_CASE("package layer: documentation rules by path", "[vm][packages]") {
  CHECK(img::layer_leaves_out("usr/share/doc/jq/README"));
  CHECK_FALSE(img::layer_leaves_out("usr/share/doc/jq/copyright"));
  CHECK(img::layer_leaves_out("usr/share/doc/jq/examples/copyright"));
  CHECK(img::layer_leaves_out("usr/share/locale/de/LC_MESSAGES/x.mo"));
  CHECK(img::layer_leaves_out("tmp"));
  CHECK_FALSE(img::layer_leaves_out("tmpfiles/x"));
  CHECK_FALSE(img::layer_leaves_out("usr/share/docs/x"));
  CHECK_FALSE(img::layer_leaves_out("usr/lib/python3.11/os.py"));
}
