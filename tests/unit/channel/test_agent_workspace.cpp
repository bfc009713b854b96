// The workspace end to end: a pack made by the host's git goes into a temp workspace through the
// real lockroom-agent, manifests are checked against `git hash-object`, exports against the
// files, syncs move the worktree (or are refused, changing nothing); and a scripted lying agent
// whose manifest breaks the host's bounds fails the channel. Also the record codecs on their own.
#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "guest/workspace_index.h"
#include "protocol/channel/base64.h"
#include "tests/fakes/lying_agent.h"
#include "tests/unit/channel/channel_harness.h"

using namespace lockroom;
using namespace lockroom::testing;
namespace wire = lockroom::protocol::channel;
namespace fs = std::filesystem;
using lockroom::channel::AgentClient;
using protocol::json;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "lockroom-workspace-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

// The host's git, isolated from this machine's configuration, with fixed identities.
std::string sh(const std::string& command) {
  std::string full = "env GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com "
                     "GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com sh -c '" + command + "' 2>&1";
  FILE* pipe = ::popen(full.c_str(), "r");
  REQUIRE(pipe);
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  int status = ::pclose(pipe);
  INFO(command << "\n" << out);
  REQUIRE(status == 0);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

void write(const fs::path& path, const std::string& content) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << content;
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

template <typename T>
Result<T> wait_for(AgentHarness& h, std::function<void(AgentClient::Done<T>)> call) {
  std::optional<Result<T>> got;
  call([&](Result<T> r) { got.emplace(std::move(r)); });
  REQUIRE(h.loop.run_until([&] { return got.has_value(); }, 60s));
  return std::move(*got);
}

// A source repository on the host and a workspace path for the guest, both temporary.
struct World {
  TempDir dir;
  fs::path src = dir.path / "src";
  fs::path ws = dir.path / "guest" / "workspace";
  std::string q(const fs::path& p) const { return "\"" + p.string() + "\""; }

  std::string commit(const std::string& message) {
    sh("cd " + q(src) + " && git add -A && git commit -q -m " + message);
    return sh("git -C " + q(src) + " rev-parse HEAD");
  }
  // A pack of what `tip` has and `have` does not; thin (deltas against `have`'s objects) if asked.
  std::string pack(const std::string& tip, const std::string& have = "", bool thin = false) {
    fs::path file = dir.path / "pack";
    sh("cd " + q(src) + " && printf \"%s\\n\" " + tip + (have.empty() ? "" : " ^" + have) + " | git pack-objects -q --revs " +
       (thin ? "--thin " : "") + "--stdout > " + q(file));
    return slurp(file);
  }
  wire::WorkspaceCheckoutParams checkout(const std::string& commit, std::optional<std::string> base = std::nullopt) const {
    wire::WorkspaceCheckoutParams p;
    p.path = ws.string();
    p.commit = commit;
    p.base = std::move(base);
    return p;
  }
  std::string hash_object(const std::string& rel) { return sh("git hash-object " + q(ws / rel)); }
  std::string status() { return sh("git -C " + q(ws) + " status --porcelain"); }
};

// The first commit of every test: a file, an executable, a symlink, a folder and a .gitignore.
std::string seed(World& w) {
  sh("git init -q -b main " + w.q(w.src));
  write(w.src / "a.txt", "alpha\n");
  write(w.src / "tool.sh", "#!/bin/sh\necho tool\n");
  fs::permissions(w.src / "tool.sh", fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec, fs::perm_options::add);
  fs::create_symlink("a.txt", w.src / "link");
  write(w.src / "dir" / "b.txt", "bravo\n");
  write(w.src / ".gitignore", "*.log\nbuild/\n");
  return w.commit("first");
}

Result<wire::WorkspaceCheckoutResult> import(AgentHarness& h, const wire::WorkspaceCheckoutParams& p, std::string pack) {
  return wait_for<wire::WorkspaceCheckoutResult>(h, [&](auto done) { h.client->import_workspace(p, std::move(pack), 64 << 20, done); });
}

Result<channel::WorkspaceManifest> manifest(AgentHarness& h, World& w) {
  wire::WorkspaceManifestParams p;
  p.path = w.ws.string();
  return wait_for<channel::WorkspaceManifest>(h, [&](auto done) { h.client->manifest(p, done); });
}

const wire::ManifestEntry* find(const channel::WorkspaceManifest& m, const std::string& path) {
  for (const auto& e : m.entries)
    if (e.path == path) return &e;
  return nullptr;
}

// Files written in this moment are "racily clean" and never cached; the cache test waits twice
// the agent's racy margin (100 ms) so that the checked-out files can be.
void let_clock_pass() { std::this_thread::sleep_for(200ms); }

}  // namespace

TEST_CASE("agent workspace: import checks a pack out with modes and symlinks, git status clean", "[channel][e2e][workspace]") {
  World w;
  std::string c1 = seed(w);
  AgentHarness h;
  auto done = import(h, w.checkout(c1), w.pack(c1));
  REQUIRE(done);
  CHECK(done->commit == c1);
  CHECK(done->branch == "main");
  CHECK(done->branch_moved);
  CHECK(done->files == 5);
  CHECK(slurp(w.ws / "a.txt") == "alpha\n");
  CHECK(slurp(w.ws / "dir" / "b.txt") == "bravo\n");
  CHECK((fs::status(w.ws / "tool.sh").permissions() & fs::perms::owner_exec) != fs::perms::none);
  CHECK((fs::status(w.ws / "a.txt").permissions() & fs::perms::owner_exec) == fs::perms::none);
  REQUIRE(fs::is_symlink(w.ws / "link"));
  CHECK(fs::read_symlink(w.ws / "link") == "a.txt");
  CHECK(w.status().empty());
  CHECK(sh("git -C " + w.q(w.ws) + " rev-parse HEAD") == c1);
  CHECK(sh("git -C " + w.q(w.ws) + " symbolic-ref HEAD") == "refs/heads/main");
  CHECK(fs::is_empty(w.ws / ".git" / "objects" / "pack") == false);
  for (const auto& entry : fs::directory_iterator(w.ws / ".git")) CHECK(entry.path().extension() != ".pack");  // temp pack removed

  // A second first-time checkout is a mistake the agent names.
  auto again = wait_for<wire::WorkspaceCheckoutResult>(h, [&](auto d) { h.client->import_workspace(w.checkout(c1), "", 1 << 20, d); });
  REQUIRE_FALSE(again);
  CHECK_THAT(again.error().message, Catch::Contains("already has commit " + c1) && Catch::Contains("pass \"base\""));
  CHECK_FALSE(h.failure);
  CHECK(h.shutdown() == 0);
}

TEST_CASE("agent workspace: a first checkout refuses untracked files in its way and changes nothing", "[channel][e2e][workspace]") {
  World w;
  std::string c1 = seed(w);
  write(w.ws / "a.txt", "the guest's own a.txt\n");
  write(w.ws / "keep.txt", "unrelated\n");
  write(w.ws / ".gitignore", "tool.sh\n");  // an ignored file is not overwritten either
  write(w.ws / "tool.sh", "the guest's own tool.sh\n");
  AgentHarness h;
  auto refused = import(h, w.checkout(c1), w.pack(c1));
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::kWrongState);
  CHECK_THAT(refused.error().message, Catch::Contains("conflict with the update in 3 file(s): .gitignore, a.txt, tool.sh; nothing was changed"));
  CHECK(slurp(w.ws / "tool.sh") == "the guest's own tool.sh\n");
  CHECK(slurp(w.ws / "a.txt") == "the guest's own a.txt\n");
  CHECK_FALSE(fs::exists(w.ws / "dir" / "b.txt"));
  CHECK_FALSE(fs::exists(w.ws / ".git" / "refs" / "heads" / "main"));

  // Out of the way, the same checkout goes through (the objects are in already) and leaves the rest.
  for (const char* path : {".gitignore", "a.txt", "tool.sh"}) fs::remove(w.ws / path);
  auto done = wait_for<wire::WorkspaceCheckoutResult>(h, [&](auto d) { h.client->import_workspace(w.checkout(c1), "", 1 << 20, d); });
  REQUIRE(done);
  CHECK(done->files == 5);
  CHECK(done->branch_moved);
  CHECK(slurp(w.ws / "a.txt") == "alpha\n");
  CHECK(w.status() == "?? keep.txt");
  CHECK(sh("git -C " + w.q(w.ws) + " symbolic-ref HEAD") == "refs/heads/main");
  CHECK_FALSE(h.failure);
  CHECK(h.shutdown() == 0);
}

TEST_CASE("agent workspace: a pack that is corrupt, too big or for a missing commit is refused", "[channel][e2e][workspace]") {
  World w;
  std::string c1 = seed(w);
  AgentHarness h;
  std::string pack = w.pack(c1);
  std::string broken = pack;
  broken[broken.size() / 2] ^= 0x5a;
  auto corrupt = import(h, w.checkout(c1), broken);
  REQUIRE_FALSE(corrupt);
  CHECK_THAT(corrupt.error().message, Catch::Contains("git index-pack refused the pack"));

  auto too_big = wait_for<wire::WorkspaceCheckoutResult>(h, [&](auto d) { h.client->import_workspace(w.checkout(c1), pack, 100, d); });
  REQUIRE_FALSE(too_big);
  CHECK(too_big.error().code == ErrorCode::kLimitExceeded);
  CHECK_THAT(too_big.error().message, Catch::Contains("the limit is 100"));

  auto missing = import(h, w.checkout(std::string(40, 'e')), "");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::kNotFound);
  CHECK_THAT(missing.error().message, Catch::Contains("commit eeeeeeeeee") && Catch::Contains("not in the workspace's object store"));
  CHECK_FALSE(h.failure);
  CHECK(h.shutdown() == 0);
}

TEST_CASE("agent workspace: manifest sees edits as git add -A would, and export returns the bytes", "[channel][e2e][workspace]") {
  World w;
  std::string c1 = seed(w);
  AgentHarness h;
  REQUIRE(import(h, w.checkout(c1), w.pack(c1)));

  write(w.ws / "a.txt", "alpha, edited\n");
  fs::permissions(w.ws / "a.txt", fs::perms::owner_exec, fs::perm_options::add);
  fs::remove(w.ws / "dir" / "b.txt");
  write(w.ws / "new" / "c.bin", std::string("\0\1\2binary\xff", 10));
  fs::create_symlink("../a.txt", w.ws / "new" / "up");
  write(w.ws / "debug.log", "ignored\n");
  write(w.ws / "build" / "out.o", "ignored too\n");
  fs::create_directories(w.ws / "empty");
  write(w.ws / "sub" / ".GIT" / "config", "not a path the host takes\n");

  auto m = manifest(h, w);
  REQUIRE(m);
  std::vector<std::string> paths;
  for (const auto& e : m->entries) paths.push_back(e.path);
  CHECK(paths == std::vector<std::string>{".gitignore", "a.txt", "link", "new/c.bin", "new/up", "tool.sh"});
  CHECK(m->summary.entries == 6);
  CHECK(m->summary.skipped == 2);  // dir/b.txt (deleted) and sub/.GIT/config
  CHECK(m->summary.stream == 0);  // small: inline
  REQUIRE(find(*m, "a.txt"));
  CHECK(find(*m, "a.txt")->mode == wire::kModeExecutable);
  CHECK(find(*m, "a.txt")->id == w.hash_object("a.txt"));
  CHECK(find(*m, "a.txt")->size == 14);
  CHECK(find(*m, "tool.sh")->mode == wire::kModeExecutable);
  CHECK(find(*m, "new/c.bin")->mode == wire::kModeFile);
  CHECK(find(*m, "new/c.bin")->id == w.hash_object("new/c.bin"));
  CHECK(find(*m, "link")->mode == wire::kModeSymlink);
  CHECK(find(*m, "link")->id == sh("printf a.txt | git hash-object --stdin"));
  CHECK(find(*m, "new/up")->id == sh("printf ../a.txt | git hash-object --stdin"));
  CHECK(find(*m, "new/up")->size == 8);
  std::int64_t total = 0;
  for (const auto& e : m->entries) total += static_cast<std::int64_t>(e.size);
  CHECK(m->summary.bytes == total);

  wire::WorkspaceExportParams x;
  x.path = w.ws.string();
  x.manifest = m->summary.manifest;
  std::vector<std::int64_t> wanted = {3, 1, 4};  // new/c.bin, a.txt, new/up
  x.entries = wanted;
  fs::remove(w.ws / "tool.sh");                   // gone after the manifest: mode 0
  x.entries.push_back(5);
  std::vector<channel::ExportedFile> files;
  auto sent = wait_for<std::int64_t>(h, [&](auto d) { h.client->export_files(x, [&](channel::ExportedFile f) { files.push_back(std::move(f)); }, d); });
  REQUIRE(sent);
  CHECK(*sent == 4);
  REQUIRE(files.size() == 4);
  CHECK(files[0].entry == 3);
  CHECK(files[0].content == slurp(w.ws / "new" / "c.bin"));
  CHECK(files[0].id == m->entries[3].id);
  CHECK(files[1].content == "alpha, edited\n");
  CHECK(files[1].mode == wire::kModeExecutable);
  CHECK(files[2].content == "../a.txt");
  CHECK(files[2].mode == wire::kModeSymlink);
  CHECK(files[3].mode == 0);
  CHECK(files[3].content.empty());

  // A file that grew past the host's bound since the manifest: the agent stops, the channel lives.
  write(w.ws / "a.txt", std::string(2000, 'g'));
  x.entries = {1};
  x.bounds.max_file_bytes = 1000;
  auto grown = wait_for<std::int64_t>(h, [&](auto d) { h.client->export_files(x, nullptr, d); });
  REQUIRE_FALSE(grown);
  CHECK(grown.error().code == ErrorCode::kLimitExceeded);
  CHECK_THAT(grown.error().message, Catch::Contains("a.txt is now 2000 bytes, over the limit of 1000"));

  x.manifest = m->summary.manifest + 7;
  auto stale = wait_for<std::int64_t>(h, [&](auto d) { h.client->export_files(x, nullptr, d); });
  REQUIRE_FALSE(stale);
  CHECK_THAT(stale.error().message, Catch::Contains("is not the latest"));
  CHECK_FALSE(h.failure);
  CHECK(h.shutdown() == 0);
}

TEST_CASE("agent workspace: a second manifest re-hashes only the file that changed", "[channel][e2e][workspace]") {
  World w;
  std::string c1 = seed(w);
  // Enough long names for a manifest body over the inline bound (64 KiB), so it comes on a stream.
  auto name = [](int i) { return "many/" + std::string(220, 'n') + std::to_string(i); };
  for (int i = 0; i < 300; ++i) write(w.src / name(i), "file " + std::to_string(i) + "\n");
  c1 = w.commit("more");
  AgentHarness h;
  REQUIRE(import(h, w.checkout(c1), w.pack(c1)));
  let_clock_pass();

  auto first = manifest(h, w);
  REQUIRE(first);
  CHECK(first->summary.entries == 305);
  // Every regular file (the symlink is not a file), hashed or known from git's index: those the
  // checkout wrote more than the racy margin before it wrote the index.
  CHECK(first->summary.hashed + first->summary.cached == 304);
  CHECK(first->summary.stream != 0);   // over the inline bound: sent on a stream

  auto second = manifest(h, w);
  REQUIRE(second);
  CHECK(second->summary.hashed == 0);
  CHECK(second->summary.cached == 304);
  CHECK(second->entries.size() == first->entries.size());

  write(w.ws / name(7), "changed, same folder\n");
  auto third = manifest(h, w);
  REQUIRE(third);
  CHECK(third->summary.hashed == 1);
  CHECK(third->summary.cached == 303);
  REQUIRE(find(*third, name(7)));
  CHECK(find(*third, name(7))->id == w.hash_object(name(7)));
  CHECK(find(*third, name(8))->id == find(*first, name(8))->id);
  CHECK_FALSE(h.failure);
  CHECK(h.shutdown() == 0);
}

TEST_CASE("agent workspace: a sync moves the worktree and keeps the guest's own edits", "[channel][e2e][workspace]") {
  World w;
  seed(w);
  std::string long_text;
  for (int i = 0; i < 2000; ++i) long_text += "line " + std::to_string(i) + "\n";
  write(w.src / "a.txt", long_text);
  std::string c1 = w.commit("long");
  AgentHarness h;
  REQUIRE(import(h, w.checkout(c1), w.pack(c1)));

  write(w.ws / "tool.sh", "#!/bin/sh\necho edited in the guest\n");   // a local edit the host did not touch
  write(w.ws / "notes.md", "the agent's notes\n");                    // an untracked file
  write(w.src / "dir" / "b.txt", "bravo, from the host\n");
  write(w.src / "a.txt", long_text + "one more\n");  // travels as a delta against the guest's a.txt
  write(w.src / "c.txt", "charlie\n");
  fs::remove(w.src / "link");
  std::string c2 = w.commit("host-edits");

  // The agent's own git holding the index lock: a failure that says so, not a conflict.
  write(w.ws / ".git" / "index.lock", "");
  auto locked = import(h, w.checkout(c2, c1), w.pack(c2, c1));
  REQUIRE_FALSE(locked);
  CHECK(locked.error().code == ErrorCode::kUnavailable);
  CHECK_THAT(locked.error().message, Catch::Contains("git read-tree failed") && Catch::Contains("index.lock"));
  CHECK(slurp(w.ws / "dir" / "b.txt") == "bravo\n");
  fs::remove(w.ws / ".git" / "index.lock");

  std::string thin = w.pack(c2, c1, true);
  CHECK(thin.size() < w.pack(c2, c1).size());  // it really is thin
  auto synced = import(h, w.checkout(c2, c1), thin);
  REQUIRE(synced);
  CHECK(synced->branch_moved);
  CHECK(synced->files == 5);  // c.txt came, link went
  CHECK(slurp(w.ws / "a.txt") == long_text + "one more\n");
  CHECK(slurp(w.ws / "dir" / "b.txt") == "bravo, from the host\n");
  CHECK(slurp(w.ws / "c.txt") == "charlie\n");
  CHECK_FALSE(fs::exists(fs::symlink_status(w.ws / "link")));
  CHECK(slurp(w.ws / "tool.sh") == "#!/bin/sh\necho edited in the guest\n");
  CHECK(slurp(w.ws / "notes.md") == "the agent's notes\n");
  CHECK(sh("git -C " + w.q(w.ws) + " rev-parse main") == c2);
  CHECK(w.status() == " M tool.sh\n?? notes.md");
  CHECK_FALSE(h.failure);
  CHECK(h.shutdown() == 0);
}

TEST_CASE("agent workspace: a sync that meets conflicting guest edits is refused and changes nothing", "[channel][e2e][workspace]") {
  World w;
  std::string c1 = seed(w);
  AgentHarness h;
  REQUIRE(import(h, w.checkout(c1), w.pack(c1)));

  write(w.ws / "a.txt", "alpha, the guest's version\n");
  write(w.ws / "d.txt", "the guest made d.txt\n");
  write(w.ws / "lib", "a file where the host makes a folder\n");
  write(w.src / "a.txt", "alpha, the host's version\n");
  write(w.src / "lib" / "util.txt", "a file in a new folder\n");
  write(w.src / "d.txt", "the host made d.txt too\n");
  write(w.src / "e.txt", "echo\n");
  std::string c2 = w.commit("conflicting");
  std::string status_before = w.status();

  auto refused = import(h, w.checkout(c2, c1), w.pack(c2, c1));
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::kWrongState);
  CHECK_THAT(refused.error().message, Catch::Contains("conflict with the update in 3 file(s): a.txt, d.txt, lib; nothing was changed"));
  CHECK(slurp(w.ws / "a.txt") == "alpha, the guest's version\n");
  CHECK(slurp(w.ws / "d.txt") == "the guest made d.txt\n");
  CHECK_FALSE(fs::exists(w.ws / "e.txt"));
  CHECK(fs::is_regular_file(w.ws / "lib"));
  CHECK(sh("git -C " + w.q(w.ws) + " rev-parse main") == c1);
  CHECK(w.status() == status_before);
  CHECK_FALSE(h.failure);
  CHECK(h.shutdown() == 0);
}

TEST_CASE("agent workspace: after a checkout the first manifest takes unchanged files from git's index", "[channel][e2e][workspace]") {
  World w;
  seed(w);
  for (int i = 0; i < 50; ++i) write(w.src / "many" / ("f" + std::to_string(i) + ".txt"), "file " + std::to_string(i) + "\n");
  std::string c1 = w.commit("many");
  AgentHarness h;
  REQUIRE(import(h, w.checkout(c1), w.pack(c1)));
  let_clock_pass();  // the checked-out files are now older than the racy margin

  write(w.src / "many" / "f7.txt", "changed on the host\n");
  std::string c2 = w.commit("one-change");
  REQUIRE(import(h, w.checkout(c2, c1), w.pack(c2, c1)));
  write(w.ws / "many" / "f8.txt", "changed in the guest, after the checkout\n");  // git's index has its old stat

  auto m = manifest(h, w);
  REQUIRE(m);
  CHECK(m->summary.hashed + m->summary.cached == 54);
  CHECK(m->summary.cached >= 52);  // all but f8 and (written by the sync just before the index) f7
  CHECK(m->summary.hashed >= 1);
  for (const char* path : {"many/f7.txt", "many/f8.txt", "many/f9.txt", "a.txt", "tool.sh"}) {
    INFO(path);
    REQUIRE(find(*m, path));
    CHECK(find(*m, path)->id == w.hash_object(path));
  }
  CHECK_FALSE(h.failure);
  CHECK(h.shutdown() == 0);
}

// How long the first manifest after an import takes for a few thousand files. Hidden; run with
// `lockroom-channel-tests "[.bench]" -s`.
TEST_CASE("agent workspace: first manifest after an import of 3000 files", "[.bench]") {
  World w;
  sh("git init -q -b main " + w.q(w.src));
  for (int i = 0; i < 3000; ++i) write(w.src / ("d" + std::to_string(i % 30)) / ("f" + std::to_string(i) + ".txt"), std::string(4096, static_cast<char>('a' + i % 26)) + std::to_string(i));
  std::string c1 = w.commit("bench");
  AgentHarness h;
  auto started = std::chrono::steady_clock::now();
  REQUIRE(import(h, w.checkout(c1), w.pack(c1)));
  auto imported = std::chrono::steady_clock::now();
  let_clock_pass();
  auto before = std::chrono::steady_clock::now();
  auto m = manifest(h, w);
  auto after = std::chrono::steady_clock::now();
  REQUIRE(m);
  for (int i = 0; i < 3; ++i) write(w.src / ("d" + std::to_string(i)) / ("f" + std::to_string(i) + ".txt"), "changed on the host\n");
  std::string c2 = w.commit("three");
  std::string pack = w.pack(c2, c1);
  auto sync_started = std::chrono::steady_clock::now();
  REQUIRE(import(h, w.checkout(c2, c1), pack));
  auto synced = std::chrono::steady_clock::now();
  using ms = std::chrono::milliseconds;
  WARN("import " << std::chrono::duration_cast<ms>(imported - started).count() << " ms; first manifest " << std::chrono::duration_cast<ms>(after - before).count()
                 << " ms: " << m->summary.hashed << " hashed, " << m->summary.cached << " cached; sync of 3 files "
                 << std::chrono::duration_cast<ms>(synced - sync_started).count() << " ms");
  CHECK(h.shutdown() == 0);
}

TEST_CASE("agent workspace: a sync of changes the guest already made itself is no conflict", "[channel][e2e][workspace]") {
  World w;
  std::string c1 = seed(w);
  AgentHarness h;
  REQUIRE(import(h, w.checkout(c1), w.pack(c1)));

  // The sandbox's own changes...
  write(w.ws / "a.txt", "alpha, changed in the sandbox\n");
  write(w.ws / "new" / "n.txt", "a new file from the sandbox\n");
  fs::remove(w.ws / "dir" / "b.txt");
  write(w.ws / "notes.md", "the agent's notes, not applied\n");
  // ...applied to the host by the user, who also changed something else.
  write(w.src / "a.txt", "alpha, changed in the sandbox\n");
  write(w.src / "new" / "n.txt", "a new file from the sandbox\n");
  fs::remove(w.src / "dir" / "b.txt");
  write(w.src / "c.txt", "charlie\n");
  std::string c2 = w.commit("applied");

  auto synced = import(h, w.checkout(c2, c1), w.pack(c2, c1));
  REQUIRE(synced);
  CHECK(synced->branch_moved);
  CHECK(synced->files == 6);
  CHECK(slurp(w.ws / "a.txt") == "alpha, changed in the sandbox\n");
  CHECK(slurp(w.ws / "c.txt") == "charlie\n");
  CHECK(sh("git -C " + w.q(w.ws) + " rev-parse main") == c2);
  CHECK(w.status() == "?? notes.md");
  CHECK_FALSE(fs::exists(w.ws / ".git" / "lockroom-index-before-sync"));

  // One path already as the host has it, one a real conflict: only the conflict is named, and
  // nothing is taken into the index.
  write(w.ws / "a.txt", "alpha, third version\n");
  write(w.ws / "tool.sh", "#!/bin/sh\necho the guest's\n");
  write(w.src / "a.txt", "alpha, third version\n");
  write(w.src / "tool.sh", "#!/bin/sh\necho the host's\n");
  std::string c3 = w.commit("mixed");
  auto refused = import(h, w.checkout(c3, c2), w.pack(c3, c2));
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::kWrongState);
  CHECK_THAT(refused.error().message, Catch::Contains("conflict with the update in 1 file(s): tool.sh; nothing was changed"));
  CHECK(sh("git -C " + w.q(w.ws) + " diff --cached --name-only") == "");
  CHECK(sh("git -C " + w.q(w.ws) + " rev-parse main") == c2);
  CHECK(w.status() == " M a.txt\n M tool.sh\n?? notes.md");

  // The agent committed one change (its index differs from BASE there) and left a new file
  // untracked; the user applied both on the host. The branch stays where the agent put it.
  sh("git -C " + w.q(w.ws) + " checkout -q -- tool.sh");
  sh("cd " + w.q(w.ws) + " && git add a.txt && git commit -q -m agent-commit");
  write(w.ws / "new" / "m.txt", "made by the agent\n");
  write(w.src / "new" / "m.txt", "made by the agent\n");
  std::string c4 = w.commit("applied-again");
  auto again = import(h, w.checkout(c4, c2), w.pack(c4, c2));
  REQUIRE(again);
  CHECK_FALSE(again->branch_moved);
  CHECK(slurp(w.ws / "tool.sh") == "#!/bin/sh\necho the host's\n");
  CHECK(slurp(w.ws / "new" / "m.txt") == "made by the agent\n");
  CHECK(sh("git -C " + w.q(w.ws) + " diff --name-only") == "");  // the worktree is what the index says
  CHECK(sh("git -C " + w.q(w.ws) + " ls-files new/m.txt") == "new/m.txt");
  CHECK_FALSE(h.failure);
  CHECK(h.shutdown() == 0);
}

TEST_CASE("agent workspace: manifest bounds are refused by the agent with the biggest offenders", "[channel][e2e][workspace]") {
  World w;
  std::string c1 = seed(w);
  AgentHarness h;
  REQUIRE(import(h, w.checkout(c1), w.pack(c1)));
  write(w.ws / "big.bin", std::string(5000, 'b'));
  wire::WorkspaceManifestParams p;
  p.path = w.ws.string();
  p.bounds.max_file_bytes = 4096;
  auto too_big = wait_for<channel::WorkspaceManifest>(h, [&](auto d) { h.client->manifest(p, d); });
  REQUIRE_FALSE(too_big);
  CHECK(too_big.error().code == ErrorCode::kLimitExceeded);
  CHECK_THAT(too_big.error().message, Catch::Contains("1 file(s) are over the limit") && Catch::Contains("big.bin"));
  p.bounds = {};
  p.bounds.max_entries = 3;
  auto too_many = wait_for<channel::WorkspaceManifest>(h, [&](auto d) { h.client->manifest(p, d); });
  REQUIRE_FALSE(too_many);
  CHECK_THAT(too_many.error().message, Catch::Contains("has 6 files; the limit is 3") && Catch::Contains("the top folder (5 files), dir (1 files)"));
  CHECK_FALSE(h.failure);
  CHECK(h.shutdown() == 0);
}

// ---- a lying agent

namespace {

// A GuestChannel and AgentClient facing the scripted LyingAgent.
struct Liar {
  Loop loop;
  std::unique_ptr<channel::GuestChannel> channel;
  std::unique_ptr<LyingAgent> agent;
  std::unique_ptr<AgentClient> client;
  std::optional<Error> failure;
  bool ready = false;

  Liar() {
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    agent = std::make_unique<LyingAgent>(loop.get(), sv[1]);
    channel = std::make_unique<channel::GuestChannel>(loop.get());
    REQUIRE(channel->start(
        sv[0], [this](Result<wire::HelloResult> r) { r ? void(ready = true) : void(failure = r.error()); },
        [this](const Error& e) { failure = e; }));
    REQUIRE(loop.run_until([&] { return ready || failure; }));
    client = std::make_unique<AgentClient>(*channel);
  }
  int finish() {
    client.reset();
    bool closed = false, agent_closed = false;
    channel->close([&] { closed = true; });
    agent->close([&] { agent_closed = true; });
    loop.run_until([&] { return closed && agent_closed; }, 5s);
    channel.reset();
    agent.reset();
    return loop.finish();
  }
};

std::string record(const std::string& path, std::uint64_t size, std::uint32_t mode = wire::kModeFile) {
  std::string out;
  wire::append_manifest_record(out, wire::ManifestEntry{path, mode, std::string(40, 'a'), size});
  return out;
}

}  // namespace

TEST_CASE("lying agent: a manifest over the host's bounds fails the channel", "[channel][hostile][workspace]") {
  SECTION("more entries announced than the host allows") {
    Liar t;
    t.agent->on_request([](LyingAgent& a, const protocol::Request& r) {
      a.reply(r.id, json{{"manifest", 1}, {"entries", 5000000}, {"bytes", 0}, {"hashed", 0}, {"cached", 0}, {"skipped", 0}, {"body", 0}, {"data", ""}});
    });
    std::optional<Result<channel::WorkspaceManifest>> got;
    t.client->manifest(wire::WorkspaceManifestParams{}, [&](Result<channel::WorkspaceManifest> r) { got.emplace(std::move(r)); });
    REQUIRE(t.loop.run_until([&] { return t.failure.has_value() && got.has_value(); }));
    CHECK_THAT(t.failure->message, Catch::Contains("malformed reply to workspace.manifest") && Catch::Contains("\"entries\""));
    REQUIRE_FALSE(*got);
    CHECK(t.finish() == 0);
  }
  SECTION("a streamed manifest with more records than announced") {
    Liar t;
    std::string body = record("a", 1) + record("b", 1);
    t.agent->on_request([&](LyingAgent& a, const protocol::Request& r) {
      std::uint32_t s = a.open_stream();
      a.reply(r.id, json{{"manifest", 1}, {"entries", 2}, {"bytes", 2}, {"hashed", 2}, {"cached", 0}, {"skipped", 0},
                         {"body", body.size()}, {"stream", s}});
      a.send_data(s, body + record("c", 1));  // one more than announced
    });
    std::optional<Result<channel::WorkspaceManifest>> got;
    t.client->manifest(wire::WorkspaceManifestParams{}, [&](Result<channel::WorkspaceManifest> r) { got.emplace(std::move(r)); });
    REQUIRE(t.loop.run_until([&] { return t.failure.has_value() && got.has_value(); }));
    CHECK_THAT(t.failure->message, Catch::Contains("workspace.manifest: the manifest is longer than the " + std::to_string(body.size()) + " bytes announced"));
    REQUIRE_FALSE(*got);
    CHECK(got->error().code == ErrorCode::kUnavailable);
    CHECK(t.finish() == 0);
  }
  SECTION("a file larger than the host accepts") {
    Liar t;
    std::string body = record("huge", 1ull << 40);
    t.agent->on_request([&](LyingAgent& a, const protocol::Request& r) {
      a.reply(r.id, json{{"manifest", 1}, {"entries", 1}, {"bytes", 1}, {"hashed", 1}, {"cached", 0}, {"skipped", 0},
                         {"body", body.size()}, {"data", wire::base64_encode(body)}});
    });
    std::optional<Result<channel::WorkspaceManifest>> got;
    t.client->manifest(wire::WorkspaceManifestParams{}, [&](Result<channel::WorkspaceManifest> r) { got.emplace(std::move(r)); });
    REQUIRE(t.loop.run_until([&] { return t.failure.has_value() && got.has_value(); }));
    CHECK_THAT(t.failure->message, Catch::Contains("\"huge\" is 1099511627776 bytes; the limit is 268435456"));
    CHECK(t.finish() == 0);
  }
}

// ---- the record codecs alone

TEST_CASE("workspace records: manifest decoder checks paths, order, modes and totals", "[channel][workspace]") {
  wire::WorkspaceBounds bounds;
  auto decode = [&](const std::string& body, std::int64_t entries, std::int64_t bytes) {
    wire::WorkspaceManifestResult announced;
    announced.entries = entries;
    announced.bytes = bytes;
    announced.body = static_cast<std::int64_t>(body.size());
    wire::ManifestDecoder d(announced, bounds);
    // Fed a byte at a time: records split anywhere must decode the same.
    for (char c : body)
      if (auto fed = d.feed(std::string_view(&c, 1)); !fed) return Result<std::vector<wire::ManifestEntry>>(fed.error());
    return d.finish();
  };
  auto good = decode(record("a/b", 3) + record("a/c", 4, wire::kModeSymlink), 2, 7);
  REQUIRE(good);
  CHECK((*good)[1].path == "a/c");
  CHECK((*good)[1].mode == wire::kModeSymlink);
  CHECK((*good)[0].id == std::string(40, 'a'));

  auto message = [&](const std::string& body, std::int64_t entries, std::int64_t bytes) {
    auto r = decode(body, entries, bytes);
    REQUIRE_FALSE(r);
    return r.error().message;
  };
  CHECK_THAT(message(record("../x", 1), 1, 1), Catch::Contains("has a \"..\" component"));
  CHECK_THAT(message(record("sub/.GIT/config", 1), 1, 1), Catch::Contains("inside a .git folder"));
  CHECK_THAT(message(record("/etc/passwd", 1), 1, 1), Catch::Contains("is absolute"));
  CHECK_THAT(message(record("b", 1) + record("a", 1), 2, 2), Catch::Contains("out of order"));
  CHECK_THAT(message(record("a", 1) + record("a", 1), 2, 2), Catch::Contains("sorted and unique"));
  CHECK_THAT(message(record("a", 1, 0100600), 1, 1), Catch::Contains("mode 100600"));
  CHECK_THAT(message(record("a", 5000, wire::kModeSymlink), 1, 5000), Catch::Contains("the limit is 4096"));
  CHECK_THAT(message(record("a", 1), 1, 2), Catch::Contains("holds 1 entries of 1 bytes, but announced 1 entries of 2 bytes"));
  std::string cut = record("a", 1);
  cut.pop_back();
  CHECK_THAT(message(cut, 1, 1), Catch::Contains("ended after"));
}

TEST_CASE("workspace records: export decoder follows the requested order and the bounds", "[channel][workspace]") {
  wire::WorkspaceBounds bounds;
  bounds.max_file_bytes = 10;
  bounds.max_total_bytes = 15;
  std::string got;
  wire::ExportDecoder::Sink sink;
  sink.on_body = [&](std::string_view b) { got.append(b); };
  sink.on_trailer = [](const std::string& id) -> Result<void> {
    if (id == std::string(40, 'f')) return make_error(ErrorCode::kInvalidInput, "claims a bad id");
    return {};
  };
  auto rec = [](std::uint32_t entry, std::uint32_t mode, const std::string& bytes, char id = '\0') {
    std::string out;
    wire::append_export_header(out, entry, mode, bytes.size());
    return out + bytes + std::string(20, id);
  };
  {
    wire::ExportDecoder d({4, 2}, bounds, sink);
    REQUIRE(d.feed(rec(4, wire::kModeFile, "hello") + rec(2, 0, "")));
    CHECK(d.finish());
    CHECK(got == "hello");
  }
  auto error = [&](std::vector<std::int64_t> wanted, const std::string& bytes) {
    wire::ExportDecoder d(std::move(wanted), bounds, sink);
    auto fed = d.feed(bytes);
    if (fed) fed = d.finish();
    REQUIRE_FALSE(fed);
    return fed.error().message;
  };
  CHECK_THAT(error({1}, rec(2, wire::kModeFile, "x")), Catch::Contains("is for manifest entry 2, but entry 1 was due"));
  CHECK_THAT(error({1}, rec(1, wire::kModeFile, std::string(11, 'x'))), Catch::Contains("announces 11 bytes; the limit is 10"));
  CHECK_THAT(error({1, 2}, rec(1, wire::kModeFile, std::string(8, 'x')) + rec(2, wire::kModeFile, std::string(8, 'x'))),
             Catch::Contains("over its limit of 15 bytes"));
  CHECK_THAT(error({1}, rec(1, 0, "x")), Catch::Contains("the limit is 0"));
  CHECK_THAT(error({1}, rec(1, wire::kModeFile, "x", '\xff')), Catch::Contains("claims a bad id"));
  CHECK_THAT(error({1}, rec(1, wire::kModeFile, "x") + rec(1, wire::kModeFile, "x")), Catch::Contains("more than the 1 requested"));
  CHECK_THAT(error({1, 2}, rec(1, wire::kModeFile, "x")), Catch::Contains("ended after 1 of 2 records"));
  CHECK_THAT(error({1}, rec(1, wire::kModeFile, "xyz").substr(0, 18)), Catch::Contains("in the middle of a record"));
}

// ---- git's index, read by the agent

TEST_CASE("workspace index: entries and count read from a real git index match git ls-files", "[channel][workspace]") {
  World w;
  seed(w);
  write(w.src / "deep" / std::string(200, 'x') / std::string(201, 'y') / "z.txt", "a long path\n");  // padded past many 8-byte steps
  w.commit("long");
  std::string index = slurp(w.src / ".git" / "index");
  auto count = lockroom::agent::index_entry_count(index);
  REQUIRE(count);
  CHECK(*count == 6);
  auto entries = lockroom::agent::index_entries(index);
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
  CHECK_FALSE(lockroom::agent::index_entry_count("DIRX" + index.substr(4)));
  std::string v5 = index;
  v5[7] = 5;
  CHECK_FALSE(lockroom::agent::index_entry_count(v5));
  CHECK_FALSE(lockroom::agent::index_entries(index.substr(0, 100)));
  CHECK_FALSE(lockroom::agent::index_entry_count(index.substr(0, 11)));
}
