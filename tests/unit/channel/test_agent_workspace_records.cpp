// The workspace's wire records on their own (manifest and export decoders), a scripted lying
// agent whose manifest breaks the host's bounds (it fails the channel), and git's index as the
// agent reads it.
#include <sys/socket.h>

#include "guest/workspace_index.h"
#include "protocol/channel/base64.h"
#include "tests/unit/channel/lying_world.h"
#include "tests/unit/channel/agent_workspace_world.h"

using namespace lockroom;
using namespace lockroom::testing;
using protocol::json;

// ---- a lying agent

namespace {

// A GuestChannel and AgentClient facing the scripted LyingAgent.
struct Liar : LyingWorld {
  Liar() {
    wait_ready();
    agent_client();
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

TEST_CASE("lying agent: a partial manifest the host did not ask for, or for another manifest, fails the channel", "[channel][hostile][workspace]") {
  std::string body = record("a", 1);
  auto partial_since = [&](std::optional<std::int64_t> asked, std::int64_t answered) {
    Liar t;
    t.agent->on_request([&](LyingAgent& a, const protocol::Request& r) {
      a.reply(r.id, json{{"manifest", 9}, {"entries", 1}, {"bytes", 1}, {"hashed", 1}, {"cached", 0}, {"skipped", 0},
                         {"body", body.size()}, {"data", wire::base64_encode(body)}, {"since", answered}});
    });
    wire::WorkspaceManifestParams p;
    p.since = asked;
    std::optional<Result<channel::WorkspaceManifest>> got;
    t.client->manifest(p, [&](Result<channel::WorkspaceManifest> r) { got.emplace(std::move(r)); });
    REQUIRE(t.loop.run_until([&] { return t.failure.has_value() && got.has_value(); }));
    REQUIRE_FALSE(*got);
    std::string why = t.failure->message;
    CHECK(t.finish() == 0);
    return why;
  };
  CHECK_THAT(partial_since(std::nullopt, 3), Catch::Contains("changes since manifest 3, which the host did not ask for"));
  CHECK_THAT(partial_since(4, 3), Catch::Contains("changes since manifest 3, not 4 as asked"));
}

TEST_CASE("workspace records: removal records only in a partial manifest, without size or id", "[channel][workspace][hostile]") {
  wire::WorkspaceBounds bounds;
  auto decode = [&](const std::string& body, std::int64_t entries, std::int64_t bytes, std::optional<std::int64_t> since) {
    wire::WorkspaceManifestResult announced;
    announced.entries = entries;
    announced.bytes = bytes;
    announced.body = static_cast<std::int64_t>(body.size());
    announced.since = since;
    wire::ManifestDecoder d(announced, bounds);
    if (auto fed = d.feed(body); !fed) return Result<std::vector<wire::ManifestEntry>>(fed.error());
    return d.finish();
  };
  auto removal = [](const std::string& path, std::uint64_t size = 0, char id = '0') {
    std::string out;
    wire::append_manifest_record(out, wire::ManifestEntry{path, wire::kModeRemoved, std::string(40, id), size});
    return out;
  };
  auto good = decode(record("a", 2) + removal("b") + record("c", 3), 3, 5, 7);
  REQUIRE(good);
  CHECK((*good)[1].mode == wire::kModeRemoved);
  CHECK((*good)[1].path == "b");

  auto message = [&](const std::string& body, std::int64_t entries, std::int64_t bytes, std::optional<std::int64_t> since) {
    auto r = decode(body, entries, bytes, since);
    REQUIRE_FALSE(r);
    return r.error().message;
  };
  CHECK_THAT(message(removal("b"), 1, 0, std::nullopt), Catch::Contains("has mode 0;"));  // a full manifest has no removals
  CHECK_THAT(message(removal("b", 5), 1, 0, 7), Catch::Contains("removes \"b\" but has a size or an id"));
  CHECK_THAT(message(removal("b", 0, 'a'), 1, 0, 7), Catch::Contains("but has a size or an id"));
  CHECK_THAT(message(removal("../etc"), 1, 0, 7), Catch::Contains("has a \"..\" component"));
  CHECK_THAT(message(record(".git/hooks/post-checkout", 1), 1, 1, 7), Catch::Contains("inside a .git folder"));
  CHECK_THAT(message(removal("b") + record("b", 1), 2, 1, 7), Catch::Contains("sorted and unique"));
  CHECK_THAT(message(record("a", 1) + removal("b"), 1, 1, 7), Catch::Contains("one more than the 1 announced"));
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
