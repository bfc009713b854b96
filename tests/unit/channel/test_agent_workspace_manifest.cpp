// The guest's workspace going out, end to end through the real lockroom-agent: manifests checked
// against `git hash-object`, exports against the files, the stat cache and git's index sparing
// re-hashes, and the bounds the host declares refused by the agent with the biggest offenders.
#include <algorithm>
#include <map>
#include <set>

#include "guest/workspace_watch.h"

#include "tests/unit/channel/agent_workspace_world.h"

using namespace lockroom;
using namespace lockroom::testing;
using protocol::json;

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

TEST_CASE("agent workspace: a file over the size limit is listed unread, the count bound names the biggest folders", "[channel][e2e][workspace]") {
  World w;
  std::string c1 = seed(w);
  AgentHarness h;
  REQUIRE(import(h, w.checkout(c1), w.pack(c1)));
  write(w.ws / "big.bin", std::string(5000, 'b'));
  wire::WorkspaceManifestParams p;
  p.path = w.ws.string();
  p.bounds.max_file_bytes = 4096;
  // Listed with its size and a zero id, and left out of the byte total: the host refuses it by
  // name and reviews the rest.
  auto listed = wait_for<channel::WorkspaceManifest>(h, [&](auto d) { h.client->manifest(p, d); });
  REQUIRE(listed);
  const auto* big = find(*listed, "big.bin");
  REQUIRE(big);
  CHECK(big->size == 5000);
  CHECK(big->id == std::string(40, '0'));
  std::uint64_t others = 0;
  for (const auto& e : listed->entries)
    if (e.path != "big.bin") others += e.size;
  CHECK(listed->summary.bytes == static_cast<std::int64_t>(others));
  REQUIRE(find(*listed, "a.txt"));
  CHECK(find(*listed, "a.txt")->id == w.hash_object("a.txt"));
  p.bounds = {};
  p.bounds.max_entries = 3;
  auto too_many = wait_for<channel::WorkspaceManifest>(h, [&](auto d) { h.client->manifest(p, d); });
  REQUIRE_FALSE(too_many);
  CHECK_THAT(too_many.error().message, Catch::Contains("has 6 files; the limit is 3") && Catch::Contains("the top folder (5 files), dir (1 files)"));
  CHECK_FALSE(h.failure);
  CHECK(h.shutdown() == 0);
}


TEST_CASE("agent workspace: manifests without git ls-files still list what git would", "[channel][e2e][workspace]") {
  World w;
  std::string c1 = seed(w);
  AgentHarness h;
  REQUIRE(import(h, w.checkout(c1), w.pack(c1)));
  write(w.ws / "logs" / "run.log", "ignored, in a folder with nothing else\n");
  let_clock_pass();  // no folder is racily new: the agent may reuse git's answer from here on
  // What git itself lists, for comparison after every step.
  auto git_paths = [&] {
    std::vector<std::string> out;
    std::stringstream listed(sh("git -C " + w.q(w.ws) + " ls-files --cached --others --exclude-standard --deduplicate"));
    for (std::string line; std::getline(listed, line);)
      if (fs::is_regular_file(fs::symlink_status(w.ws / line)) || fs::is_symlink(fs::symlink_status(w.ws / line))) out.push_back(line);
    std::sort(out.begin(), out.end());
    return out;
  };
  auto listed = [&] {
    auto m = manifest(h, w);
    REQUIRE(m);
    std::vector<std::string> out;
    for (const auto& e : m->entries) out.push_back(e.path);
    return out;
  };
  CHECK(listed() == git_paths());
  write(w.ws / "a.txt", "an edit changes no folder\n");
  CHECK(listed() == git_paths());
  write(w.ws / "dir" / "new.txt", "a new file in a listed folder\n");
  CHECK(listed() == git_paths());
  let_clock_pass();
  listed();
  write(w.ws / "logs" / "readme.txt", "a new file where only ignored ones were\n");
  CHECK(listed() == git_paths());
  let_clock_pass();
  listed();
  write(w.ws / ".gitignore", "build/\n");  // *.log is no longer ignored, and no folder changed
  CHECK(listed() == git_paths());
  let_clock_pass();
  listed();
  sh("git -C " + w.q(w.ws) + " rm -q --cached tool.sh");  // tracked no more: untracked now
  CHECK(listed() == git_paths());
  CHECK_FALSE(h.failure);
  CHECK(h.shutdown() == 0);
}

// ---- partial manifests and the workspace watch

TEST_CASE("agent workspace: a partial manifest holds only what changed since the manifest the host names", "[channel][e2e][workspace]") {
  World w;
  std::string c1 = seed(w);
  AgentHarness h;
  REQUIRE(import(h, w.checkout(c1), w.pack(c1)));
  auto m1 = manifest(h, w);
  REQUIRE(m1);

  write(w.ws / "a.txt", "alpha, edited\n");
  fs::remove(w.ws / "dir" / "b.txt");
  write(w.ws / "new" / "c.txt", "charlie\n");
  write(w.ws / "new" / "d.log", "ignored\n");
  auto m2 = manifest_since(h, w, m1->summary.manifest);
  REQUIRE(m2);
  REQUIRE(m2->summary.since == m1->summary.manifest);
  std::vector<std::string> records;
  for (const auto& e : m2->entries) records.push_back(e.path + (e.mode == wire::kModeRemoved ? " (removed)" : ""));
  CHECK(records == std::vector<std::string>{"a.txt", "dir/b.txt (removed)", "new/c.txt"});
  CHECK(find(*m2, "a.txt")->id == w.hash_object("a.txt"));
  CHECK(m2->summary.bytes == 14 + 8);
  auto full = manifest(h, w);
  REQUIRE(full);
  CHECK_FALSE(full->summary.since);
  CHECK(same(patched(*m1, *m2), by_path(*full)));

  // An edit in place: the watch names the file, nothing else is looked at again.
  write(w.ws / "new" / "c.txt", "charlie, twice\n");
  auto m4 = manifest_since(h, w, full->summary.manifest);
  REQUIRE(m4);
  REQUIRE(m4->entries.size() == 1);
  CHECK(m4->entries[0].path == "new/c.txt");
  CHECK(m4->entries[0].id == w.hash_object("new/c.txt"));
  CHECK(m4->summary.hashed == 1);
  // Nothing changed: an empty partial manifest.
  auto m5 = manifest_since(h, w, m4->summary.manifest);
  REQUIRE(m5);
  CHECK(m5->summary.since == m4->summary.manifest);
  CHECK(m5->entries.empty());
  // The one before the latest is remembered too; older or unknown ones get everything.
  auto m6 = manifest_since(h, w, m4->summary.manifest);
  REQUIRE(m6);
  CHECK(m6->summary.since == m4->summary.manifest);
  auto stale = manifest_since(h, w, m4->summary.manifest);
  REQUIRE(stale);
  CHECK_FALSE(stale->summary.since);
  CHECK(stale->entries.size() == full->entries.size());
  auto unknown = manifest_since(h, w, 999999);
  REQUIRE(unknown);
  CHECK_FALSE(unknown->summary.since);
  CHECK(same(by_path(*unknown), patched(*full, *m4)));
  // Export indexes name the records of the latest (partial) manifest.
  write(w.ws / "a.txt", "alpha, third\n");
  auto m9 = manifest_since(h, w, unknown->summary.manifest);
  REQUIRE(m9);
  REQUIRE(m9->entries.size() == 1);
  wire::WorkspaceExportParams x;
  x.path = w.ws.string();
  x.manifest = m9->summary.manifest;
  x.entries = {0};
  std::vector<channel::ExportedFile> files;
  REQUIRE(wait_for<std::int64_t>(h, [&](auto d) { h.client->export_files(x, [&](channel::ExportedFile f) { files.push_back(std::move(f)); }, d); }));
  REQUIRE(files.size() == 1);
  CHECK(files[0].content == "alpha, third\n");
  // A manifest refused for a bound does not lose the files written before it.
  write(w.ws / "a.txt", std::string(3000, 'x'));
  write(w.ws / "new" / "c.txt", "charlie, written before the refusal\n");
  wire::WorkspaceManifestParams small;
  small.path = w.ws.string();
  small.bounds.max_total_bytes = 1000;
  small.since = m9->summary.manifest;
  auto refused = wait_for<channel::WorkspaceManifest>(h, [&](auto d) { h.client->manifest(small, d); });
  REQUIRE_FALSE(refused);
  write(w.ws / "a.txt", "alpha, small again\n");
  auto after = manifest_since(h, w, m9->summary.manifest);
  REQUIRE(after);
  REQUIRE(find(*after, "new/c.txt"));
  CHECK(find(*after, "new/c.txt")->id == w.hash_object("new/c.txt"));
  CHECK(find(*after, "a.txt")->id == w.hash_object("a.txt"));
  CHECK_FALSE(h.failure);
  CHECK(h.shutdown() == 0);
}

TEST_CASE("agent workspace: the watch names written files, and anything structural or lost means a full listing", "[channel][workspace]") {
  World w;
  fs::path root = w.ws;
  write(root / "a" / "b" / "g.txt", "g\n");
  write(root / "top.txt", "top\n");
  write(root / ".git" / "index", "not really\n");
  agent::WorkspaceWatch watch(3);
  REQUIRE(watch.start(root.string()));
  CHECK(watch.take().structural);  // what happened before it started is unknown
  CHECK(watch.watches() == 3);     // the root, a, a/b (not .git)

  write(root / "a" / "b" / "g.txt", "g, edited\n");
  fs::permissions(root / "top.txt", fs::perms::owner_exec, fs::perm_options::add);
  auto edits = watch.take();
  CHECK_FALSE(edits.structural);
  CHECK(edits.dirty == std::set<std::string>{"a/b/g.txt", "top.txt"});
  auto quiet = watch.take();
  CHECK_FALSE(quiet.structural);
  CHECK(quiet.dirty.empty());

  write(root / "a" / "new.txt", "a new file\n");
  CHECK(watch.take().structural);
  fs::create_directories(root / "fresh" / "deeper");
  CHECK(watch.take().structural);
  write(root / "fresh" / "deeper" / "h.txt", "h\n");
  CHECK(watch.take().structural);  // created: structural; its folder is watched from the mkdir on
  write(root / "fresh" / "deeper" / "h.txt", "h, edited\n");
  CHECK(watch.take().dirty == std::set<std::string>{"fresh/deeper/h.txt"});
  fs::rename(root / "top.txt", root / "moved.txt");
  CHECK(watch.take().structural);
  write(root / ".git" / "index", "git wrote its index\n");
  CHECK(watch.take().structural);
  write(root / "a" / ".gitignore", "*.o\n");
  CHECK(watch.take().structural);

  // More written files than it keeps: lost, so a full listing; re-armed, it is precise again.
  for (const char* f : {"a/b/g.txt", "moved.txt", "a/new.txt", "fresh/deeper/h.txt"}) write(root / f, "again\n");
  auto lost = watch.take();
  CHECK(lost.structural);
  write(root / "a" / "new.txt", "after the loss\n");
  auto after = watch.take();
  CHECK_FALSE(after.structural);
  CHECK(after.dirty == std::set<std::string>{"a/new.txt"});

  fs::remove_all(root / "fresh");
  CHECK(watch.take().structural);
  CHECK(watch.watches() == 3);  // fresh and fresh/deeper's watches went with them
}

// ---- inline content in partial manifests
