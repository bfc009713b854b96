// The workspace coming into the guest, end to end through the real lockroom-agent: a pack made by
// the host's git is imported and checked out, and syncs move the worktree (done by the agent
// itself when every changed path is clean, by git otherwise) or are refused, changing nothing.
#include "tests/unit/channel/agent_workspace_world.h"

using namespace lockroom;
using namespace lockroom::testing;
using protocol::json;

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
