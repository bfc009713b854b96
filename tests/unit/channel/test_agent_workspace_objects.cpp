// The agent's own git pieces against real git: a pack indexed by the agent gives the very .idx
// `git index-pack` writes; objects read from packs (deltas included) and loose files are what
// `git cat-file` prints; git's index entries as the agent reads them are what `git ls-files -s`
// lists, and the index read and written back is the index git reads; and a sync
// done by the agent leaves the repository as `git read-tree -m -u` would, or does nothing at all
// when a changed path is not clean.
#include <variant>

#include "guest/workspace_fast_sync.h"
#include "guest/workspace_index.h"
#include "guest/workspace_index_file.h"
#include "guest/workspace_objects.h"
#include "tests/unit/channel/agent_workspace_world.h"

using namespace lockroom;
using namespace lockroom::testing;
using namespace lockroom::agent;

namespace {

std::string raw(const std::string& hex) {
  std::string out(20, '\0');
  for (std::size_t i = 0; i < 20; ++i) out[i] = static_cast<char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  return out;
}

// A repository whose blobs delta well: one long file in several versions.
std::string long_text(int version) {
  std::string text;
  for (int i = 0; i < 400; ++i) text += "line " + std::to_string(i) + (i == version * 7 ? " changed in version " + std::to_string(version) : "") + "\n";
  return text;
}

std::string history(World& w, int versions) {
  sh("git init -q -b main " + w.q(w.src));
  std::string last;
  for (int v = 0; v < versions; ++v) {
    write(w.src / "long.txt", long_text(v));
    write(w.src / "dir" / ("f" + std::to_string(v) + ".txt"), "file " + std::to_string(v) + "\n");
    last = w.commit("v" + std::to_string(v));
  }
  return last;
}

}  // namespace

TEST_CASE("agent objects: a pack indexed by the agent gives the .idx git index-pack writes", "[channel][workspace]") {
  World w;
  std::string tip = history(w, 6);
  std::string pack = w.pack(tip);
  auto indexed = index_pack(pack);
  REQUIRE(indexed);
  write(w.dir.path / "p.pack", pack);
  sh("cd " + w.q(w.dir.path) + " && git index-pack -o p.idx p.pack >/dev/null");
  CHECK(indexed->idx == slurp(w.dir.path / "p.idx"));
  CHECK(indexed->ids.size() == std::stoul(sh("cd " + w.q(w.src) + " && git rev-list --objects " + tip + " | wc -l")));
  CHECK(sh("git verify-pack -v " + w.q(w.dir.path / "p.idx") + " | grep -c \"chain length\" || true") != "0");  // it holds deltas

  SECTION("a corrupt, cut or thin pack is refused, so git gets it") {
    std::string broken = pack;
    broken[broken.size() / 2] ^= 0x5a;
    CHECK_FALSE(index_pack(broken));
    CHECK_FALSE(index_pack(pack.substr(0, pack.size() - 30)));
    CHECK_FALSE(index_pack("PACK"));
    write(w.src / "long.txt", long_text(9));
    std::string next = w.commit("thin");
    auto thin = index_pack(w.pack(next, tip, true));
    REQUIRE_FALSE(thin);
    CHECK_THAT(thin.error().message, Catch::Contains("thin"));
    CHECK(index_pack(w.pack(next, tip, false)));
  }
}

TEST_CASE("agent objects: objects read from packs and loose files are what git cat-file prints", "[channel][workspace]") {
  World w;
  std::string tip = history(w, 5);
  sh("cd " + w.q(w.src) + " && git repack -adq");
  write(w.src / "loose.txt", "a loose object\n");
  std::string loose_commit = w.commit("loose");
  ObjectReader reader((w.src / ".git").string());
  for (const std::string& rev : {tip, loose_commit}) {
    auto commit = reader.read(raw(rev));
    REQUIRE(commit);
    CHECK(commit->type == ObjectType::kCommit);
    CHECK(commit->data == sh("git -C " + w.q(w.src) + " cat-file commit " + rev) + "\n");
    auto tree_id = commit_tree(commit->data);
    REQUIRE(tree_id);
    auto tree = reader.read(*tree_id);
    REQUIRE(tree);
    auto entries = parse_tree(tree->data);
    REQUIRE(entries);
    std::string listed;
    for (const auto& e : *entries) {
      char mode[16];
      std::snprintf(mode, sizeof mode, "%06o", e.mode);
      listed += std::string(mode) + " " + (e.mode == 040000 ? "tree " : "blob ") + wire::id_to_hex(e.raw_id) + "\t" + e.name + "\n";
    }
    CHECK(listed == sh("git -C " + w.q(w.src) + " ls-tree " + rev) + "\n");
  }
  for (int v = 0; v < 5; ++v) {  // most versions of long.txt are deltas in the repacked pack
    std::string id = sh("git -C " + w.q(w.src) + " rev-parse " + tip + "~" + std::to_string(4 - v) + ":long.txt");
    auto blob = reader.read(raw(id));
    REQUIRE(blob);
    CHECK(blob->data == long_text(v));
    CHECK(wire::id_to_hex(object_id(ObjectType::kBlob, blob->data)) == id);
  }
  CHECK(reader.has(raw(loose_commit)));
  CHECK_FALSE(reader.has(std::string(20, '\x42')));
  CHECK_FALSE(reader.read(std::string(20, '\x42')));

  SECTION("deltas and trees that do not hold together are refused") {
    CHECK_FALSE(apply_delta("abc", std::string("\x03\x01\x91\x00\x02", 5), 100));  // copies past the result's size
    CHECK_FALSE(apply_delta("abc", std::string("\x04\x01\x01x", 4), 100));          // the base is 3 bytes, not 4
    CHECK_FALSE(apply_delta("abc", std::string("\x03\x05\x90\x09", 4), 100));       // copies past the base
    CHECK(apply_delta("abc", std::string("\x03\x04\x91\x01\x02\x02yz", 8), 100) == std::optional<std::string>("bcyz"));
    CHECK_FALSE(parse_tree(std::string("100644 a\0short", 14)));
    CHECK_FALSE(commit_tree("parent x\n"));
  }
}

TEST_CASE("agent index file: read and written back, git reads the same index", "[channel][workspace]") {
  World w;
  seed(w);
  write(w.src / "deep" / std::string(120, 'x') / "z.txt", "a long path\n");
  w.commit("long");
  sh("git -C " + w.q(w.src) + " status -s >/dev/null");  // git writes its extensions (cache tree)
  fs::path index_path = w.src / ".git" / "index";
  std::string before = sh("git -C " + w.q(w.src) + " ls-files -s --debug");
  auto index = read_index_file(index_path.string());
  REQUIRE(index);
  CHECK(index->size() == 6);
  REQUIRE(index->find("a.txt"));
  CHECK_FALSE(index->find("a.tx"));
  CHECK(index->has_below("dir"));
  CHECK_FALSE(index->has_below("di"));
  struct stat st{};
  REQUIRE(::lstat((w.src / "a.txt").c_str(), &st) == 0);
  CHECK(index->clean(*index->find("a.txt"), st, 0) == (st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec < index->written_ns()));
  write(w.dir.path / "index", index->serialize());
  fs::copy_file(w.dir.path / "index", index_path, fs::copy_options::overwrite_existing);
  CHECK(sh("git -C " + w.q(w.src) + " ls-files -s --debug") == before);
  CHECK(sh("git -C " + w.q(w.src) + " status --porcelain") == "");

  SECTION("an index git would not write plainly is left to git") {
    sh("git -C " + w.q(w.src) + " update-index --index-version 4");
    CHECK_FALSE(read_index_file(index_path.string()));
    sh("git -C " + w.q(w.src) + " update-index --index-version 2 && git -C " + w.q(w.src) + " update-index --assume-unchanged a.txt");
    CHECK_FALSE(read_index_file(index_path.string()));
    sh("git -C " + w.q(w.src) + " update-index --no-assume-unchanged a.txt && git -C " + w.q(w.src) + " update-index --split-index");
    CHECK_FALSE(read_index_file(index_path.string()));
  }
}

namespace {

// A guest-like workspace: a clone of the source at its first commit, the second fetched.
struct SyncWorld {
  World w;
  std::string c1, c2;
  explicit SyncWorld(const std::function<void(World&)>& change) {
    c1 = seed(w);
    sh("git clone -q " + w.q(w.src) + " " + w.q(w.ws));
    change(w);
    c2 = w.commit("host-edits");
    sh("git -C " + w.q(w.ws) + " fetch -q origin");
  }
  std::optional<Outcome> sync(StatCache& cache) {
    return fast_sync(w.checkout(c2, c1), cache);
  }
  std::string git(const std::string& args) { return sh("git -C " + w.q(w.ws) + " " + args); }
};

}  // namespace

TEST_CASE("agent fast sync: the worktree, index and branch end as git read-tree -m -u leaves them", "[channel][workspace]") {
  SyncWorld s([](World& w) {
    write(w.src / "a.txt", "alpha, from the host\n");
    write(w.src / "new" / "deep" / "n.txt", "a new file in new folders\n");
    fs::remove(w.src / "dir" / "b.txt");  // its folder goes too
    fs::remove(w.src / "link");
    fs::create_symlink("tool.sh", w.src / "link");
    fs::permissions(w.src / "a.txt", fs::perms::owner_exec, fs::perm_options::add);
  });
  write(s.w.ws / "tool.sh", "#!/bin/sh\necho edited in the guest\n");  // a local edit elsewhere stays
  write(s.w.ws / "notes.md", "untracked\n");
  StatCache cache(1000);
  FastSyncStats stats;
  auto done = fast_sync(s.w.checkout(s.c2, s.c1), cache, &stats);
  REQUIRE(done);
  REQUIRE(std::holds_alternative<json>(*done));
  auto result = wire::parse_workspace_checkout_result(std::get<json>(*done));
  REQUIRE(result);
  CHECK(result->branch_moved);
  CHECK(result->files == 5);
  CHECK(stats.changed == 4);
  CHECK(slurp(s.w.ws / "a.txt") == "alpha, from the host\n");
  CHECK((fs::status(s.w.ws / "a.txt").permissions() & fs::perms::owner_exec) != fs::perms::none);
  CHECK(slurp(s.w.ws / "new" / "deep" / "n.txt") == "a new file in new folders\n");
  CHECK_FALSE(fs::exists(s.w.ws / "dir"));
  CHECK(fs::read_symlink(s.w.ws / "link") == "tool.sh");
  CHECK(s.git("rev-parse main") == s.c2);
  CHECK(s.git("diff-index --cached --name-only " + s.c2) == "");  // the index is COMMIT's tree (with the local edit unstaged)
  CHECK(s.git("status --porcelain") == " M tool.sh\n?? notes.md");
  CHECK(s.git("reflog -1 --format=%gs main") == "lockroom: sync");
  CHECK(s.git("fsck --no-progress 2>&1 | grep -v dangling || true") == "");
}

TEST_CASE("agent fast sync: a changed path that is not clean leaves everything to git", "[channel][workspace]") {
  auto change = [](World& w) {
    write(w.src / "a.txt", "alpha, from the host\n");
    write(w.src / "c.txt", "charlie\n");
  };
  StatCache cache(1000);
  SECTION("an edit of a changed file") {
    SyncWorld s(change);
    write(s.w.ws / "a.txt", "the guest's\n");
    CHECK_FALSE(s.sync(cache));
    CHECK(s.git("status --porcelain") == " M a.txt");
  }
  SECTION("an untracked file where the host adds one") {
    SyncWorld s(change);
    write(s.w.ws / "c.txt", "the guest's\n");
    CHECK_FALSE(s.sync(cache));
    CHECK(slurp(s.w.ws / "c.txt") == "the guest's\n");
  }
  SECTION("a staged change") {
    SyncWorld s(change);
    write(s.w.ws / "a.txt", "staged\n");
    s.git("add a.txt");
    write(s.w.ws / "a.txt", "alpha\n");
    CHECK_FALSE(s.sync(cache));
    CHECK(s.git("status --porcelain") == "MM a.txt");
  }
  SECTION("git's index lock held") {
    SyncWorld s(change);
    write(s.w.ws / ".git" / "index.lock", "");
    CHECK_FALSE(s.sync(cache));
    CHECK(fs::exists(s.w.ws / ".git" / "index.lock"));
    fs::remove(s.w.ws / ".git" / "index.lock");
    CHECK(s.sync(cache));  // and with it gone, the same sync goes through
    CHECK_FALSE(fs::exists(s.w.ws / ".git" / "index.lock"));
  }
  SECTION("a file the host turns into a folder") {
    SyncWorld s([](World& w) {
      fs::remove(w.src / "a.txt");
      write(w.src / "a.txt" / "inner", "now a folder\n");
    });
    CHECK_FALSE(s.sync(cache));
    CHECK(slurp(s.w.ws / "a.txt") == "alpha\n");
  }
}

TEST_CASE("workspace index: entries and count read from a real git index match git ls-files", "[channel][workspace]") {
  World w;
  seed(w);
  write(w.src / "deep" / std::string(200, 'x') / std::string(201, 'y') / "z.txt", "a long path\n");  // padded past many 8-byte steps
  w.commit("long");
  std::string index = slurp(w.src / ".git" / "index");
  auto count = index_entry_count(index);
  REQUIRE(count);
  CHECK(*count == 6);
  auto entries = index_entries(index);
  REQUIRE(entries);
  std::string listed;
  for (const auto& e : *entries) {
    char mode[16];
    std::snprintf(mode, sizeof mode, "%06o", e.mode);
    listed += std::string(mode) + " " + wire::id_to_hex(e.raw_id) + " 0\t" + e.path + "\n";
  }
  CHECK(listed == sh("git -C " + w.q(w.src) + " ls-files -s") + "\n");
  struct stat st{};
  REQUIRE(::lstat((w.src / "a.txt").c_str(), &st) == 0);
  CHECK(entries->front().path == ".gitignore");
  CHECK((*entries)[1].ino == static_cast<std::uint32_t>(st.st_ino));
  CHECK((*entries)[1].mtime_ns == static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec);

  // Not an index, another version, or cut short: nothing, so the caller asks git instead.
  CHECK_FALSE(index_entry_count("DIRX" + index.substr(4)));
  std::string v5 = index;
  v5[7] = 5;
  CHECK_FALSE(index_entry_count(v5));
  CHECK_FALSE(index_entries(index.substr(0, 100)));
  CHECK_FALSE(index_entry_count(index.substr(0, 11)));
}
