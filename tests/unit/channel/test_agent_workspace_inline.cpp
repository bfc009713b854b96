// A partial manifest's inline content, end to end through the real lockroom-agent: the changed
// files' bytes from the read that made their ids, within the host's bounds, whole or (when the
// host asks) as deltas against the version the host holds.
#include <map>

#include "guest/workspace_inline_delta.h"
#include "tests/unit/channel/agent_workspace_world.h"

using namespace lockroom;
using namespace lockroom::testing;

namespace {

Result<channel::WorkspaceManifest> manifest_inline(AgentHarness& h, World& w, std::optional<std::int64_t> since, wire::InlineBounds bounds = {}) {
  wire::WorkspaceManifestParams p;
  p.path = w.ws.string();
  p.since = since;
  p.inline_content = bounds;
  return wait_for<channel::WorkspaceManifest>(h, [&](auto done) { h.client->manifest(p, done); });
}

// path -> inlined content.
std::map<std::string, std::string> inlined_by_path(const channel::WorkspaceManifest& m) {
  std::map<std::string, std::string> out;
  for (const auto& c : m.inlined) out[m.entries.at(c.entry).path] = c.content;
  return out;
}

}  // namespace

TEST_CASE("agent workspace: a partial manifest carries the changed files it read, within the host's bounds", "[channel][e2e][workspace]") {
  World w;
  std::string c1 = seed(w);
  AgentHarness h;
  REQUIRE(import(h, w.checkout(c1), w.pack(c1)));
  write(w.ws / "a.txt", "alpha, edited before the first manifest\n");
  // A whole manifest carries no content, even when asked (the host has most blobs then).
  auto m1 = manifest_inline(h, w, std::nullopt);
  REQUIRE(m1);
  CHECK(m1->inlined.empty());
  CHECK(m1->summary.inlined == 0);

  write(w.ws / "a.txt", "alpha, edited\n");
  write(w.ws / "big.txt", std::string(3000, 'b'));  // over the per-file bound asked below
  write(w.ws / "new" / "c1.txt", std::string(100, '1'));
  write(w.ws / "new" / "c2.txt", std::string(100, '2'));
  write(w.ws / "new" / "c3.txt", std::string(100, '3'));  // past the total bound: 14 + 100 + 100 + 100 > 250
  write(w.ws / "new" / "d.txt", "");
  fs::create_symlink("../a.txt", w.ws / "new" / "up");
  fs::remove(w.ws / "dir" / "b.txt");
  wire::InlineBounds bounds{2000, 250};
  auto m2 = manifest_inline(h, w, m1->summary.manifest, bounds);
  REQUIRE(m2);
  REQUIRE(m2->summary.since == m1->summary.manifest);
  std::vector<std::string> records;
  for (const auto& e : m2->entries) records.push_back(e.path);
  CHECK(records == std::vector<std::string>{"a.txt", "big.txt", "dir/b.txt", "new/c1.txt", "new/c2.txt", "new/c3.txt", "new/d.txt", "new/up"});
  // In record order while the total fits: a.txt (14), c1 and c2 (100 each), then c3 would pass
  // 250, the empty file and the symlink (8) still fit. Never the removal, never big.txt.
  auto got = inlined_by_path(*m2);
  CHECK(got == std::map<std::string, std::string>{{"a.txt", "alpha, edited\n"},
                                                  {"new/c1.txt", std::string(100, '1')},
                                                  {"new/c2.txt", std::string(100, '2')},
                                                  {"new/d.txt", ""},
                                                  {"new/up", "../a.txt"}});
  CHECK(m2->summary.inlined == 5);
  CHECK(m2->summary.inline_bytes == 14 + 100 + 100 + 0 + 8);
  for (std::size_t i = 1; i < m2->inlined.size(); ++i) CHECK(m2->inlined[i - 1].entry < m2->inlined[i].entry);
  for (const auto& c : m2->inlined) CHECK(c.content.size() == m2->entries[c.entry].size);
  CHECK(find(*m2, "a.txt")->id == w.hash_object("a.txt"));

  // Changed since m1 but not read for this manifest (the watch saw nothing since m2, the ids are
  // m2's): records, and no content.
  auto m3 = manifest_inline(h, w, m1->summary.manifest, bounds);
  REQUIRE(m3);
  REQUIRE(m3->summary.since == m1->summary.manifest);
  CHECK(m3->entries.size() == m2->entries.size());
  CHECK(m3->summary.hashed == 0);
  CHECK(m3->inlined.empty());

  // Not asked: no content. Asked: a content past the inline `data` bound comes on the stream.
  write(w.ws / "a.txt", "alpha, third\n");
  auto m4 = manifest_since(h, w, m3->summary.manifest);
  REQUIRE(m4);
  REQUIRE(m4->entries.size() == 1);
  CHECK(m4->inlined.empty());
  std::string large(100000, 'L');
  write(w.ws / "a.txt", large);
  auto m5 = manifest_inline(h, w, m4->summary.manifest);
  REQUIRE(m5);
  CHECK(m5->summary.stream != 0);
  REQUIRE(m5->inlined.size() == 1);
  CHECK(m5->inlined[0].content == large);
  CHECK(m5->entries[m5->inlined[0].entry].id == w.hash_object("a.txt"));
  CHECK_FALSE(h.failure);
  CHECK(h.shutdown() == 0);
}

TEST_CASE("agent workspace: with deltas asked for, a file sent before comes back as the bytes that changed", "[channel][e2e][workspace]") {
  World w;
  std::string c1 = seed(w);
  AgentHarness h;
  REQUIRE(import(h, w.checkout(c1), w.pack(c1)));
  auto m1 = manifest_inline(h, w, std::nullopt);
  REQUIRE(m1);
  wire::InlineBounds deltas{1 << 20, 8 << 20, true};

  // First change: the agent has no bytes of the base (it was never sent): the whole file.
  std::string text;
  for (int i = 0; i < 200; ++i) text += "line " + std::to_string(i) + " of a file the agent edits\n";
  write(w.ws / "a.txt", text);
  write(w.ws / "small.txt", "tiny\n");
  auto m2 = manifest_inline(h, w, m1->summary.manifest, deltas);
  REQUIRE(m2);
  REQUIRE(m2->inlined.size() == 2);
  for (const auto& c : m2->inlined) CHECK_FALSE(c.delta.has_value());

  // Then one line in the middle changes, and one is appended to the small file: the big one comes
  // as a delta against m2's version (what the host holds), the small one whole (a delta would
  // not be less than half of it).
  std::string edited = text;
  edited.replace(edited.find("line 100 of"), 8, "LINE 100");
  write(w.ws / "a.txt", edited);
  write(w.ws / "small.txt", "tiny\nmore\n");
  auto m3 = manifest_inline(h, w, m2->summary.manifest, deltas);
  REQUIRE(m3);
  REQUIRE(m3->inlined.size() == 2);
  const wire::InlinedContent* a = nullptr;
  for (const auto& c : m3->inlined)
    if (m3->entries[c.entry].path == "a.txt") a = &c;
  REQUIRE(a);
  REQUIRE(a->delta.has_value());
  CHECK(a->content.size() < 16);  // the changed bytes only
  std::string rebuilt = text.substr(0, a->delta->prefix) + a->content + text.substr(text.size() - a->delta->suffix);
  CHECK(rebuilt == edited);
  CHECK(m3->entries[a->entry].id == w.hash_object("a.txt"));
  CHECK(m3->summary.inline_bytes == static_cast<std::int64_t>(wire::kInlineDeltaHeaderBytes + a->content.size() + 10));  // + small.txt whole
  for (const auto& c : m3->inlined)
    if (m3->entries[c.entry].path == "small.txt") CHECK_FALSE(c.delta.has_value());

  // Not asked for deltas: whole files, as before.
  write(w.ws / "a.txt", text);
  auto m4 = manifest_inline(h, w, m3->summary.manifest);
  REQUIRE(m4);
  REQUIRE(m4->inlined.size() == 1);
  CHECK_FALSE(m4->inlined[0].delta.has_value());
  CHECK(m4->inlined[0].content == text);
  CHECK_FALSE(h.failure);
  CHECK(h.shutdown() == 0);
}

TEST_CASE("agent workspace: delta_between finds the longest common prefix, then suffix, at any alignment", "[channel][workspace]") {
  // Against the obvious byte loop, over edits at every offset around the 8-byte steps.
  auto slow = [](std::string_view a, std::string_view b) {
    std::size_t most = std::min(a.size(), b.size()), prefix = 0, suffix = 0;
    while (prefix < most && a[prefix] == b[prefix]) ++prefix;
    while (suffix < most - prefix && a[a.size() - 1 - suffix] == b[b.size() - 1 - suffix]) ++suffix;
    return std::pair{prefix, suffix};
  };
  std::string base;
  for (int i = 0; i < 70; ++i) base += static_cast<char>('a' + (i * 7) % 26);
  int checked = 0;
  for (std::size_t at = 0; at <= base.size(); ++at)
    for (std::size_t cut : {0, 1, 3, 8, 9, 17}) {
      for (const std::string& insert : {std::string(), std::string("X"), std::string("0123456789abcdef")}) {
        if (at + cut > base.size()) continue;
        std::string now = base.substr(0, at) + insert + base.substr(at + cut);
        auto delta = agent::delta_between(base, now);
        auto expected = slow(base, now);
        INFO("edit at " << at << ", " << cut << " cut, " << insert.size() << " inserted");
        CHECK(delta.prefix == expected.first);
        CHECK(delta.suffix == expected.second);
        CHECK(delta.prefix + delta.suffix <= std::min(base.size(), now.size()));
        checked++;
      }
    }
  CHECK(checked > 1000);
  CHECK(agent::delta_between("", "abc").prefix == 0);
  CHECK(agent::delta_between("aaaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaa").prefix == 16);
  CHECK(agent::delta_between("aaaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaa").suffix == 0);
}
