// Files hashed early (EagerHashes, fed by the workspace watch): a hash is handed to a manifest
// only when no event touched the file after the hash began and no event was lost (the case a
// stat cannot catch: a rewrite of the same size in the same clock tick); and, end to end through
// the real lockroom-agent, manifests after early hashing report what is on disk, also when the
// file was rewritten with the same size right after, and carry the bytes the early hash kept.
#include "guest/workspace_eager_hash.h"
#include "tests/unit/channel/agent_workspace_world.h"

using namespace lockroom;
using namespace lockroom::testing;

namespace {

std::string hex(const std::string& raw) { return protocol::channel::id_to_hex(raw); }

// The watch's closed files queued and hashed, as the agent's loop does.
void hash_early(agent::WorkspaceWatch& watch, agent::EagerHashes& eager, const fs::path& root) {
  watch.drain();
  eager.queue(watch.take_closed());
  while (eager.pending()) eager.work(root.string(), watch.events(), 1'000'000'000);
}

}  // namespace

TEST_CASE("agent workspace: an early hash is used only while nothing touched its file", "[channel][workspace]") {
  World w;
  fs::path root = w.ws;
  write(root / "a.txt", "one\n");
  agent::WorkspaceWatch watch(4);
  REQUIRE(watch.start(root.string()));
  auto first = watch.take();
  CHECK_FALSE(first.lost);
  CHECK(first.watching_since == watch.events());  // what happened before it started is unknown
  agent::EagerHashes eager;
  eager.keep_bytes(1 << 20, 8 << 20);

  // Written and closed: hashed early, with its bytes, and handed over.
  write(root / "a.txt", "two\n");
  write(root / "big.bin", std::string(agent::EagerHashes::kMaxFileBytes + 1, 'x'));  // over the early bound
  hash_early(watch, eager, root);
  CHECK(eager.hashed() == 1);
  auto seen = watch.take();
  CHECK_FALSE(seen.lost);
  auto earlier = eager.take(seen);
  REQUIRE(earlier.count("a.txt"));
  CHECK(hex(earlier["a.txt"].raw_id) == agent::blob_id("two\n"));
  CHECK(earlier["a.txt"].bytes == std::optional<std::string>("two\n"));
  struct stat st{};
  REQUIRE(::lstat((root / "a.txt").c_str(), &st) == 0);
  CHECK(earlier["a.txt"].key == agent::stat_key(st));
  CHECK_FALSE(earlier.count("big.bin"));
  CHECK(eager.hashed() == 0);  // taken: the next manifest starts over

  // Written again after the hash (same size, maybe the same clock tick): not handed over.
  write(root / "a.txt", "six\n");
  hash_early(watch, eager, root);
  write(root / "a.txt", "ten\n");
  CHECK(eager.take(watch.take()).empty());

  // Hashed, then events lost (more written files than the watch keeps): nothing is vouched for.
  write(root / "a.txt", "one more\n");
  hash_early(watch, eager, root);
  for (const char* f : {"b.txt", "c.txt", "d.txt", "e.txt", "f.txt"}) write(root / f, "new\n");
  auto lost = watch.take();
  CHECK(lost.lost);
  CHECK(eager.take(lost).empty());

  // Bytes are kept only within the bounds asked; the id is kept either way.
  eager.keep_bytes(4, 100);
  write(root / "a.txt", "four\n");  // 5 bytes: over 4
  write(root / "b.txt", "abc\n");
  hash_early(watch, eager, root);
  auto bounded = eager.take(watch.take());
  REQUIRE(bounded.count("a.txt"));
  REQUIRE(bounded.count("b.txt"));
  CHECK_FALSE(bounded["a.txt"].bytes);
  CHECK(hex(bounded["a.txt"].raw_id) == agent::blob_id("four\n"));
  CHECK(bounded["b.txt"].bytes == std::optional<std::string>("abc\n"));

  // A hash that began before the watches were (re)armed vouches for nothing; one after does.
  for (std::uint64_t after : {std::uint64_t{3}, std::uint64_t{5}}) {
    eager.queue({"a.txt"});
    eager.work(root.string(), after, 1'000'000'000);
    agent::WorkspaceWatch::Changes rearmed;
    rearmed.lost = false;
    rearmed.watching_since = 5;
    auto kept = eager.take(rearmed);
    CHECK(kept.count("a.txt") == (after >= 5 ? 1u : 0u));
  }
}

TEST_CASE("agent workspace: manifests after early hashing report what is on disk", "[channel][e2e][workspace]") {
  World w;
  std::string c1 = seed(w);
  AgentHarness h;
  REQUIRE(import(h, w.checkout(c1), w.pack(c1)));
  auto m1 = manifest(h, w);
  REQUIRE(m1);
  std::int64_t since = m1->summary.manifest;
  wire::WorkspaceManifestParams p;
  p.path = w.ws.string();
  p.inline_content = wire::InlineBounds{};
  for (int round = 0; round < 6; ++round) {
    // Written, given time to be hashed early, then (every other round) rewritten at once with
    // the same size: the early hash must not stand for the second version.
    std::string first = "round " + std::to_string(round) + " first\n";
    write(w.ws / "a.txt", first);
    write(w.ws / "dir" / "b.txt", std::string(2000 + round, 'b'));
    let_clock_pass();
    std::string now = first;
    if (round % 2) {
      now = "round " + std::to_string(round) + " again\n";
      REQUIRE(now.size() == first.size());
      write(w.ws / "a.txt", now);
    }
    p.since = since;
    auto m = wait_for<channel::WorkspaceManifest>(h, [&](auto done) { h.client->manifest(p, done); });
    REQUIRE(m);
    REQUIRE(m->summary.since == since);
    INFO("round " << round);
    REQUIRE(find(*m, "a.txt"));
    CHECK(find(*m, "a.txt")->id == w.hash_object("a.txt"));
    CHECK(find(*m, "a.txt")->id == agent::blob_id(now));
    REQUIRE(find(*m, "dir/b.txt"));
    CHECK(find(*m, "dir/b.txt")->id == w.hash_object("dir/b.txt"));
    // Both came inline (the early hash kept their bytes), whole or as a delta the host rebuilds.
    CHECK(m->summary.inlined == 2);
    since = m->summary.manifest;
  }
  CHECK_FALSE(h.failure);
  CHECK(h.shutdown() == 0);
}
