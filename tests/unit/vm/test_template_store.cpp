// The template store on a real file system: keys, publishing (first rename wins), validation
// of every file against meta.json, removal, LRU eviction and the sweep of dead processes' files.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "server/vm/template_store.h"
#include "tests/support/temp_dir.h"

using namespace lockroom;
using namespace lockroom::vm;
namespace fs = std::filesystem;

namespace {

// A template store's dirs (templates and RAM files) in a temp dir of their own.
struct TempDirs {
  lockroom::testing::TempDir base{"lockroom-tpl"};
  TemplateDirs dirs;
  TempDirs() {
    dirs.root = base / "templates";
    dirs.ram_root = base / "ram";
    REQUIRE(prepare_template_dirs(dirs).ok());
  }
};

void write(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

QemuConfig machine() {
  QemuConfig m;
  m.kernel = "/images/abc/kernel";
  m.initrd = "/images/abc/initrd";
  m.kernel_cmdline = "console=ttyS0 quiet panic=-1 tsc_early_khz=2400000 tsc=reliable lockroom.port=agent";
  return m;
}

// A build as a booted template leaves it: a state file and a RAM file.
TemplateBuild fake_build(const TemplateDirs& dirs, const std::string& key, const std::string& state = "device state bytes") {
  auto build = begin_build(dirs, key);
  REQUIRE(build.ok());
  write(build->dir / "device.state", state);
  write(build->ram_file, std::string(8192, 'r'));
  return *build;
}

TemplateMeta meta_for(const std::string& identity, TemplateKind kind = TemplateKind::kBase) {
  TemplateMeta m;
  m.identity = identity;
  m.key = template_key(identity);
  m.kind = kind;
  m.boot_ms = 6500;
  return m;
}

std::string publish_one(const TemplateDirs& dirs, const std::string& identity, TemplateKind kind = TemplateKind::kBase) {
  auto meta = meta_for(identity, kind);
  auto published = publish_build(dirs, fake_build(dirs, meta.key), meta);
  REQUIRE(published.ok());
  REQUIRE(*published);
  return meta.key;
}

int dead_pid() {
  pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  return child;
}

}  // namespace

TEST_CASE("template store: the key follows the machine and the image, not the TSC measurement", "[vm][templates]") {
  auto base = template_identity(machine(), "image-1");
  CHECK(base == template_identity(machine(), "image-1"));
  CHECK(template_key(base).size() == 32);
  auto other_tsc = machine();
  other_tsc.kernel_cmdline = "console=ttyS0 quiet panic=-1 tsc_early_khz=2399871 tsc=reliable lockroom.port=agent";
  CHECK(template_identity(other_tsc, "image-1") == base);
  CHECK(template_identity(machine(), "image-2") != base);
  auto bigger = machine();
  bigger.memory_mib = 1024;
  CHECK(template_identity(bigger, "image-1") != base);
  auto two_cpus = machine();
  two_cpus.vcpus = 2;
  CHECK(template_identity(two_cpus, "image-1") != base);
  auto kvm = machine();
  kvm.accel = Accel::kKvm;
  CHECK(template_identity(kvm, "image-1") != base);
  auto other_qemu = machine();
  other_qemu.qemu = "/nonexistent/qemu-system-x86_64";
  CHECK(template_identity(other_qemu, "image-1") != base);
  CHECK(template_identity(machine(), "image-1").find("lockroom ") != std::string::npos);
  auto ws = workspace_template_identity(base, "/home/u/project", "opts");
  CHECK(ws != workspace_template_identity(base, "/home/u/other", "opts"));
  CHECK(ws != workspace_template_identity(base, "/home/u/project", "other-opts"));
}

TEST_CASE("template store: meta.json round-trips and refuses another format", "[vm][templates]") {
  auto m = meta_for("id", TemplateKind::kWorkspace);
  m.workspace_path = "/w";
  m.workspace_commit = std::string(40, 'a');
  m.workspace_branch = "main";
  auto back = meta_from_json(meta_to_json(m));
  REQUIRE(back.ok());
  CHECK(back->key == m.key);
  CHECK(back->kind == TemplateKind::kWorkspace);
  CHECK(back->workspace_commit == m.workspace_commit);
  auto j = meta_to_json(m);
  j["format"] = kTemplateFormatVersion + 1;
  CHECK_FALSE(meta_from_json(j).ok());
  j = meta_to_json(m);
  j.erase("stateSha256");
  CHECK_FALSE(meta_from_json(j).ok());
}

TEST_CASE("template store: a published template loads, the second publisher of a key loses", "[vm][templates]") {
  TempDirs t;
  auto meta = meta_for("identity A");
  auto first = fake_build(t.dirs, meta.key);
  auto second = fake_build(t.dirs, meta.key);
  auto won = publish_build(t.dirs, first, meta);
  REQUIRE(won.ok());
  CHECK(*won);
  auto lost = publish_build(t.dirs, second, meta);
  REQUIRE(lost.ok());
  CHECK_FALSE(*lost);
  discard_build(second);
  CHECK_FALSE(fs::exists(second.dir));
  CHECK_FALSE(fs::exists(second.ram_file));

  auto loaded = load_stored(t.dirs, meta.key, "identity A");
  REQUIRE(loaded.ok());
  CHECK(loaded->meta.ram_file == first.ram_file);
  CHECK(loaded->meta.state_bytes == std::string("device state bytes").size());
  CHECK(loaded->meta.boot_ms == 6500);
  // Private: the dir 0700, meta and RAM file 0600.
  CHECK((fs::status(loaded->dir).permissions() & fs::perms::all) == fs::perms::owner_all);
  CHECK((fs::status(loaded->dir / "meta.json").permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write));
  CHECK((fs::status(first.ram_file).permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write));

  auto missing = load_stored(t.dirs, template_key("identity B"), "identity B");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == ErrorCode::kNotFound);
}

TEST_CASE("template store: a damaged or foreign template is refused, never trusted", "[vm][templates]") {
  TempDirs t;
  auto key = publish_one(t.dirs, "identity A");
  auto ram = load_stored(t.dirs, key, "identity A")->meta.ram_file;
  fs::path state = t.dirs.root / key / "device.state";

  SECTION("made for another machine or version") {
    auto r = load_stored(t.dirs, key, "identity A, but another lockroom");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kInvalidInput);
  }
  SECTION("truncated device state") {
    fs::resize_file(state, 3);
    auto r = load_stored(t.dirs, key, "identity A");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("device state") != std::string::npos);
  }
  SECTION("device state of the same size, other bytes") {
    write(state, "DEVICE STATE BYTES");
    CHECK_FALSE(load_stored(t.dirs, key, "identity A").ok());
  }
  SECTION("RAM file gone (a reboot clears /dev/shm)") {
    fs::remove(ram);
    auto r = load_stored(t.dirs, key, "identity A");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("gone") != std::string::npos);
  }
  SECTION("RAM file truncated") {
    fs::resize_file(ram, 4096);
    CHECK_FALSE(load_stored(t.dirs, key, "identity A").ok());
  }
  SECTION("RAM file replaced by another of the same size") {
    fs::remove(ram);
    write(ram, std::string(8192, 'r'));
    chmod(ram.c_str(), 0600);
    CHECK_FALSE(load_stored(t.dirs, key, "identity A").ok());
  }
  SECTION("meta.json missing") {
    fs::remove(t.dirs.root / key / "meta.json");
    auto r = load_stored(t.dirs, key, "identity A");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kInvalidInput);
  }
  // Whatever was wrong, removal takes the dir and the RAM file.
  remove_stored(t.dirs, key);
  CHECK_FALSE(fs::exists(t.dirs.root / key));
  CHECK_FALSE(fs::exists(ram));
  CHECK(load_stored(t.dirs, key, "identity A").error().code == ErrorCode::kNotFound);
}

TEST_CASE("template store: dirs that are symlinks or too open are not used as they are", "[vm][templates]") {
  TempDirs t;
  TemplateDirs linked{t.base / "link", t.base / "ram2"};
  fs::create_symlink(t.dirs.root, linked.root);
  CHECK_FALSE(prepare_template_dirs(linked).ok());
  fs::path open_dir = t.base / "open";
  fs::create_directory(open_dir);
  chmod(open_dir.c_str(), 0755);
  REQUIRE(prepare_template_dirs({open_dir, t.base / "ram3"}).ok());
  CHECK((fs::status(open_dir).permissions() & fs::perms::all) == fs::perms::owner_all);
}

TEST_CASE("template store: eviction keeps the most recently used within the caps", "[vm][templates]") {
  TempDirs t;
  std::vector<std::string> keys;
  for (int i = 0; i < 3; ++i) {
    keys.push_back(publish_one(t.dirs, "ws " + std::to_string(i), TemplateKind::kWorkspace));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  auto base_key = publish_one(t.dirs, "base");
  // Using the oldest makes it the most recent (a tick later: file times are coarse, a few ms).
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  REQUIRE(load_stored(t.dirs, keys[0], "ws 0").ok());
  auto listed = list_stored(t.dirs);
  REQUIRE(listed.size() == 4);
  CHECK(listed.front().stored.meta.key == keys[0]);
  CHECK(listed.front().disk_bytes > 0);

  auto removed = evict(t.dirs, TemplateKind::kWorkspace, 2, 1ull << 30, "");
  REQUIRE(removed.size() == 1);
  CHECK(removed[0] == keys[1]);
  CHECK(fs::exists(t.dirs.root / keys[0]));
  CHECK(fs::exists(t.dirs.root / keys[2]));
  CHECK(fs::exists(t.dirs.root / base_key));  // another kind: not counted

  // A byte cap below one template leaves only the one to keep.
  removed = evict(t.dirs, TemplateKind::kWorkspace, 10, 1, keys[2]);
  CHECK(removed == std::vector<std::string>{keys[0]});
  CHECK(fs::exists(t.dirs.root / keys[2]));
}

TEST_CASE("template store: the sweep removes only dead processes' leftovers", "[vm][templates]") {
  TempDirs t;
  auto key = publish_one(t.dirs, "published");
  auto published_ram = load_stored(t.dirs, key, "published")->meta.ram_file;
  int dead = dead_pid();
  fs::path dead_build = t.dirs.root / (".build-k-" + std::to_string(dead) + "-1");
  fs::path dead_ram = t.dirs.ram_root / ("k-" + std::to_string(dead) + "-1.ram");
  fs::path live_ram = t.dirs.ram_root / ("k-" + std::to_string(getpid()) + "-99.ram");
  fs::path foreign = t.dirs.ram_root / "notes.txt";
  fs::create_directory(dead_build);
  write(dead_ram, "x");
  write(live_ram, "x");
  write(foreign, "x");
  CHECK(sweep_stale(t.dirs) == 2);
  CHECK_FALSE(fs::exists(dead_build));
  CHECK_FALSE(fs::exists(dead_ram));
  CHECK(fs::exists(live_ram));
  CHECK(fs::exists(foreign));
  CHECK(fs::exists(published_ram));  // its publisher's pid may be gone; it is referenced
}
