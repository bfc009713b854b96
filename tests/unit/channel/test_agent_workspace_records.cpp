// The workspace's wire records on their own (manifest and export decoders, a partial manifest's
// inline content), a scripted lying agent whose manifest breaks the host's bounds or framing or
// sends inline content it should not (it fails the channel) or lists entries the review must
// refuse (handed over intact).
#include <sys/socket.h>

#include "guest/workspace_hash.h"
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
  SECTION("a file larger than the host accepts, counted in the total as if it could be taken") {
    Liar t;
    std::string body = record("huge", 1ull << 40);
    t.agent->on_request([&](LyingAgent& a, const protocol::Request& r) {
      a.reply(r.id, json{{"manifest", 1}, {"entries", 1}, {"bytes", 1}, {"hashed", 1}, {"cached", 0}, {"skipped", 0},
                         {"body", body.size()}, {"data", wire::base64_encode(body)}});
    });
    std::optional<Result<channel::WorkspaceManifest>> got;
    t.client->manifest(wire::WorkspaceManifestParams{}, [&](Result<channel::WorkspaceManifest> r) { got.emplace(std::move(r)); });
    REQUIRE(t.loop.run_until([&] { return t.failure.has_value() && got.has_value(); }));
    CHECK_THAT(t.failure->message, Catch::Contains("holds 1 entries of 0 bytes, but announced 1 entries of 1 bytes"));
    CHECK(t.finish() == 0);
  }
}

TEST_CASE("lying agent: entries the review must refuse are handed over as sent, the channel stays up", "[channel][hostile][workspace]") {
  // Judging what an entry says is the review's (test_lying_agent_review.cpp): here they arrive intact.
  Liar t;
  std::string body = record("../x", 1) + record(".git/hooks/pre-commit", 1, wire::kModeExecutable) + record("/etc/passwd", 1) +
                     record("dev", 1, 0020644) + record("huge", 1ull << 40) + record("link", 5000, wire::kModeSymlink);
  t.agent->on_request([&](LyingAgent& a, const protocol::Request& r) {
    // The file and the symlink over their limits are not in "bytes".
    a.reply(r.id, json{{"manifest", 1}, {"entries", 6}, {"bytes", 4}, {"hashed", 6}, {"cached", 0}, {"skipped", 0},
                       {"body", body.size()}, {"data", wire::base64_encode(body)}});
  });
  std::optional<Result<channel::WorkspaceManifest>> got;
  t.client->manifest(wire::WorkspaceManifestParams{}, [&](Result<channel::WorkspaceManifest> r) { got.emplace(std::move(r)); });
  REQUIRE(t.loop.run_until([&] { return got.has_value(); }));
  REQUIRE(*got);
  const auto& entries = (*got)->entries;
  REQUIRE(entries.size() == 6);
  CHECK(entries[0].path == "../x");
  CHECK(entries[1].path == ".git/hooks/pre-commit");
  CHECK(entries[2].path == "/etc/passwd");
  CHECK(entries[3].mode == 0020644);
  CHECK(entries[4].size == (1ull << 40));
  CHECK(entries[5].size == 5000);
  CHECK_FALSE(t.failure);
  CHECK(t.finish() == 0);
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
  CHECK_THAT(message(removal("b", 5), 1, 0, 7), Catch::Contains("removes \"b\" but has a size or an id"));
  CHECK_THAT(message(removal("b", 0, 'a'), 1, 0, 7), Catch::Contains("but has a size or an id"));
  // In a whole manifest a removal record is an entry of mode 0, and the review refuses it; so is
  // a removal of a path the review never held ("../etc"), in a partial one.
  auto whole = decode(removal("b"), 1, 0, std::nullopt);
  REQUIRE(whole);
  CHECK((*whole)[0].mode == 0);
  CHECK(decode(removal("../etc"), 1, 0, 7));
  CHECK_THAT(message(removal("b") + record("b", 1), 2, 1, 7), Catch::Contains("sorted and unique"));
  CHECK_THAT(message(record("a", 1) + removal("b"), 1, 1, 7), Catch::Contains("one more than the 1 announced"));
}

// ---- the record codecs alone

TEST_CASE("workspace records: manifest decoder checks framing, order and totals and passes entries on as sent", "[channel][workspace]") {
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
  CHECK_THAT(message(record("", 1), 1, 1), Catch::Contains("has a path of 0 bytes; paths are 1 to 4096 bytes"));
  CHECK_THAT(message(record(std::string(4097, 'x'), 1), 1, 1), Catch::Contains("has a path of 4097 bytes"));
  CHECK_THAT(message(record("b", 1) + record("a", 1), 2, 2), Catch::Contains("out of order"));
  CHECK_THAT(message(record("a", 1) + record("a", 1), 2, 2), Catch::Contains("sorted and unique"));
  // Sizes over the limits are not in the total: announcing them there is a lie.
  CHECK_THAT(message(record("a", 5000, wire::kModeSymlink), 1, 5000), Catch::Contains("holds 1 entries of 0 bytes, but announced 1 entries of 5000"));
  auto over = decode(record("a", 5000, wire::kModeSymlink) + record("b", bounds.max_file_bytes + 1), 2, 0);
  REQUIRE(over);
  CHECK((*over)[1].size == static_cast<std::uint64_t>(bounds.max_file_bytes) + 1);
  // What an entry says is the review's to judge: passed on as sent.
  auto odd = decode(record("../x", 1) + record("/etc/passwd", 1) + record("a", 1, 0100600) + record("sub/.GIT/config", 1), 4, 4);
  REQUIRE(odd);
  CHECK((*odd)[0].path == "../x");
  CHECK((*odd)[2].mode == 0100600);
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

// ---- inline content after a partial manifest's records

namespace {

// A record whose id is the blob id of `content` (as the agent computes it).
std::string record_of(const std::string& path, const std::string& content, std::uint32_t mode = wire::kModeFile) {
  std::string out;
  wire::append_manifest_record(out, wire::ManifestEntry{path, mode, agent::blob_id(content), content.size()});
  return out;
}

std::string removal_record(const std::string& path) {
  std::string out;
  wire::append_manifest_record(out, wire::ManifestEntry{path, wire::kModeRemoved, std::string(40, '0'), 0});
  return out;
}

std::string content_of(std::uint32_t index, const std::string& content) {
  std::string out;
  wire::append_inline_content(out, index, content);
  return out;
}

// What the host's AgentClient computes for each content.
std::string host_blob_id(std::string_view content) { return agent::blob_id(content); }

}  // namespace

TEST_CASE("workspace records: inline content follows the records, checked against the bounds and the ids", "[channel][workspace][hostile]") {
  wire::InlineBounds bounds{10, 15};
  // `entries` records, then contents; `inlined` and `inline_bytes` as announced.
  auto decode = [&](const std::string& body, std::int64_t entries, std::int64_t bytes, std::int64_t inlined, std::int64_t inline_bytes,
                    std::size_t chunk) -> Result<std::pair<std::vector<wire::ManifestEntry>, std::vector<wire::InlinedContent>>> {
    wire::WorkspaceManifestResult announced;
    announced.since = 3;
    announced.entries = entries;
    announced.bytes = bytes;
    announced.inlined = inlined;
    announced.inline_bytes = inline_bytes;
    announced.body = static_cast<std::int64_t>(body.size());
    wire::ManifestDecoder d(announced, wire::WorkspaceBounds{}, bounds, host_blob_id);
    for (std::size_t at = 0; at < body.size(); at += chunk)
      if (auto fed = d.feed(std::string_view(body).substr(at, chunk)); !fed) return fed.error();
    auto decoded = d.finish();
    if (!decoded) return decoded.error();
    return std::make_pair(std::move(*decoded), d.take_inlined());
  };
  std::string records = record_of("a", "hello") + removal_record("b") + record_of("c", "") + record_of("d", "0123456789");
  std::string good = records + content_of(0, "hello") + content_of(2, "") + content_of(3, "0123456789");
  for (std::size_t chunk : {std::size_t{1}, std::size_t{7}, good.size()}) {
    INFO("chunk " << chunk);
    auto r = decode(good, 4, 15, 3, 15, chunk);
    REQUIRE(r);
    REQUIRE(r->second.size() == 3);
    CHECK(r->second[0].entry == 0);
    CHECK(r->second[0].content == "hello");
    CHECK(r->second[1].entry == 2);
    CHECK(r->second[1].content.empty());
    CHECK(r->second[2].entry == 3);
    CHECK(r->second[2].content == "0123456789");
  }
  auto message = [&](const std::string& inline_part, std::int64_t inlined, std::int64_t inline_bytes) {
    auto r = decode(records + inline_part, 4, 15, inlined, inline_bytes, 5);
    REQUIRE_FALSE(r);
    return r.error().message;
  };
  CHECK_THAT(message(content_of(4, ""), 1, 0), Catch::Contains("inline content 0 names record 4 of 4"));
  CHECK_THAT(message(content_of(2, "") + content_of(0, "hello"), 2, 5), Catch::Contains("names record 0 after record 2: indexes must increase"));
  CHECK_THAT(message(content_of(2, "") + content_of(2, ""), 2, 0), Catch::Contains("indexes must increase"));
  CHECK_THAT(message(content_of(1, ""), 1, 0), Catch::Contains("is for record 1, which removes \"b\""));
  CHECK_THAT(message(content_of(0, "hellO"), 1, 5), Catch::Contains("inline content 0 (\"a\") has blob id " + agent::blob_id("hellO") +
                                                                     ", but its record says " + agent::blob_id("hello")));
  CHECK_THAT(message(content_of(0, "hello"), 2, 5), Catch::Contains("carries 1 inline contents of 5 bytes, but announced 2 of 5 bytes"));
  CHECK_THAT(message(content_of(0, "hello"), 1, 6), Catch::Contains("carries 1 inline contents of 5 bytes, but announced 1 of 6 bytes"));
  CHECK_THAT(message(content_of(0, "hello") + content_of(2, ""), 1, 5), Catch::Contains("inline content 1 is one more than the 1 announced"));
  CHECK_THAT(message(content_of(0, "hel"), 1, 5), Catch::Contains("ended after"));
  // Over the bounds the host asked for: one file, and all together.
  std::string big = std::string(11, 'x');
  std::string with_big = record_of("a", big) + content_of(0, big);
  auto over_file = decode(with_big, 1, 11, 1, 11, 4);
  REQUIRE_FALSE(over_file);
  CHECK_THAT(over_file.error().message, Catch::Contains("is for \"a\" of 11 bytes; the host asked for files up to 10"));
  std::string two = record_of("a", "0123456789") + record_of("b", "012345") + content_of(0, "0123456789") + content_of(1, "012345");
  auto over_total = decode(two, 2, 16, 2, 16, 4);
  REQUIRE_FALSE(over_total);
  CHECK_THAT(over_total.error().message, Catch::Contains("inline content 1 brings the inline content over the 15 bytes"));
  // Without a way to compute ids, nothing inline is accepted.
  wire::WorkspaceManifestResult announced;
  announced.since = 3;
  announced.entries = 1;
  announced.bytes = 5;
  announced.inlined = 1;
  announced.inline_bytes = 5;
  std::string unchecked = record_of("a", "hello") + content_of(0, "hello");
  announced.body = static_cast<std::int64_t>(unchecked.size());
  wire::ManifestDecoder blind(announced, wire::WorkspaceBounds{}, bounds);
  auto fed = blind.feed(unchecked);
  REQUIRE_FALSE(fed);
  CHECK_THAT(fed.error().message, Catch::Contains("cannot be checked"));
}

TEST_CASE("workspace records: a delta carries only the changed bytes, when the host asked for deltas", "[channel][workspace][hostile]") {
  auto decode = [&](const std::string& body, std::int64_t bytes, std::int64_t inline_bytes, bool deltas, std::size_t chunk)
      -> Result<std::vector<wire::InlinedContent>> {
    wire::WorkspaceManifestResult announced;
    announced.since = 3;
    announced.entries = 1;
    announced.bytes = bytes;
    announced.inlined = 1;
    announced.inline_bytes = inline_bytes;
    announced.body = static_cast<std::int64_t>(body.size());
    wire::ManifestDecoder d(announced, wire::WorkspaceBounds{}, wire::InlineBounds{100, 100, deltas}, host_blob_id);
    for (std::size_t at = 0; at < body.size(); at += chunk)
      if (auto fed = d.feed(std::string_view(body).substr(at, chunk)); !fed) return fed.error();
    auto decoded = d.finish();
    if (!decoded) return decoded.error();
    return d.take_inlined();
  };
  // "hello, new world" from a base "hello, old world": 7 bytes kept before, 6 after, "new" carried.
  // The id is not checked here (that needs the base): the host rebuilds the file and checks it.
  std::string record = record_of("a", "hello, new world");
  std::string delta;
  wire::append_inline_delta(delta, 0, wire::InlineDelta{7, 6}, "new");
  for (std::size_t chunk : {std::size_t{1}, std::size_t{5}, record.size() + delta.size()}) {
    INFO("chunk " << chunk);
    auto got = decode(record + delta, 16, static_cast<std::int64_t>(delta.size() - 4), true, chunk);
    REQUIRE(got);
    REQUIRE(got->size() == 1);
    CHECK((*got)[0].entry == 0);
    REQUIRE((*got)[0].delta.has_value());
    CHECK((*got)[0].delta->prefix == 7);
    CHECK((*got)[0].delta->suffix == 6);
    CHECK((*got)[0].content == "new");
  }
  // Not asked for: the agent lies.
  auto unasked = decode(record + delta, 16, static_cast<std::int64_t>(delta.size() - 4), false, 64);
  REQUIRE_FALSE(unasked);
  CHECK_THAT(unasked.error().message, Catch::Contains("is a delta, which the host did not ask for"));
  // Keeping more of the base than the file has.
  std::string greedy;
  wire::append_inline_delta(greedy, 0, wire::InlineDelta{10, 10}, "");
  auto over = decode(record + greedy, 16, static_cast<std::int64_t>(greedy.size() - 4), true, 64);
  REQUIRE_FALSE(over);
  CHECK_THAT(over.error().message, Catch::Contains("keeps 20 bytes of its base, more than the 16 bytes of the file"));
  // Its bytes count as carried: header and middle, not the file's size.
  auto miscounted = decode(record + delta, 16, 16, true, 64);
  REQUIRE_FALSE(miscounted);
  CHECK_THAT(miscounted.error().message, Catch::Contains("but announced 1 of 16 bytes"));
}

TEST_CASE("lying agent: inline content that breaks the rules fails the channel", "[channel][hostile][workspace]") {
  // The answer to a partial manifest asked for with inline content: `records`, then `contents`.
  auto answer = [](const std::string& records, const std::string& contents, std::int64_t entries, std::int64_t bytes, std::int64_t inlined,
                   std::int64_t inline_bytes, std::optional<std::int64_t> since = 1) {
    std::string body = records + contents;
    json j{{"manifest", 9}, {"entries", entries}, {"bytes", bytes}, {"hashed", entries}, {"cached", 0}, {"skipped", 0},
           {"body", body.size()}, {"data", wire::base64_encode(body)}, {"inlined", inlined}, {"inlineBytes", inline_bytes}};
    if (since) j["since"] = *since;
    return j;
  };
  auto failure = [](const json& reply, std::optional<wire::InlineBounds> asked, std::optional<std::int64_t> since = 1) {
    Liar t;
    t.agent->on_request([&](LyingAgent& a, const protocol::Request& r) { a.reply(r.id, reply); });
    wire::WorkspaceManifestParams p;
    p.since = since;
    p.inline_content = asked;
    std::optional<Result<channel::WorkspaceManifest>> got;
    t.client->manifest(p, [&](Result<channel::WorkspaceManifest> r) { got.emplace(std::move(r)); });
    REQUIRE(t.loop.run_until([&] { return t.failure.has_value() && got.has_value(); }));
    REQUIRE_FALSE(*got);
    CHECK(got->error().code == ErrorCode::kUnavailable);
    std::string why = t.failure->message;
    CHECK(t.finish() == 0);
    return why;
  };
  wire::InlineBounds asked{100, 1000};
  std::string hello = record_of("a.txt", "hello");
  CHECK_THAT(failure(answer(hello, content_of(0, "hellO"), 1, 5, 1, 5), asked),
             Catch::Contains("workspace.manifest: inline content 0 (\"a.txt\") has blob id " + agent::blob_id("hellO")));
  CHECK_THAT(failure(answer(hello + removal_record("b"), content_of(1, ""), 2, 5, 1, 0), asked),
             Catch::Contains("is for record 1, which removes \"b\""));
  CHECK_THAT(failure(answer(hello, content_of(7, ""), 1, 5, 1, 0), asked), Catch::Contains("names record 7 of 1"));
  std::string two = record_of("a", "1") + record_of("b", "2");
  CHECK_THAT(failure(answer(two, content_of(1, "2") + content_of(0, "1"), 2, 2, 2, 2), asked), Catch::Contains("indexes must increase"));
  std::string big(101, 'x');
  CHECK_THAT(failure(answer(record_of("a", big), content_of(0, big), 1, 101, 1, 101), asked),
             Catch::Contains("the host asked for files up to 100"));
  CHECK_THAT(failure(answer(hello, "", 1, 5, 1, 5), asked), Catch::Contains("too short for 1 entries and 1 inline contents"));
  CHECK_THAT(failure(answer(hello, content_of(0, "hello"), 1, 5, 1, 4), asked), Catch::Contains("over the 4 bytes announced"));
  CHECK_THAT(failure(answer(hello, content_of(0, "hello"), 1, 5, 1, 2000), asked), Catch::Contains("\"inlineBytes\""));  // over what was asked
  CHECK_THAT(failure(answer(hello, content_of(0, "hello"), 1, 5, 1, 5), std::nullopt), Catch::Contains("the host asked for no inline content"));
  CHECK_THAT(failure(answer(hello, content_of(0, "hello"), 1, 5, 1, 5, std::nullopt), asked, std::nullopt),
             Catch::Contains("only a partial manifest carries inline content"));
  json negative_time = answer(hello, content_of(0, "hello"), 1, 5, 1, 5);
  negative_time["agentMs"] = -1;
  CHECK_THAT(failure(negative_time, asked), Catch::Contains("\"agentMs\""));
}

TEST_CASE("lying agent: inline content checked right is handed over with its entry", "[channel][hostile][workspace]") {
  Liar t;
  std::string body = record_of("a.txt", "hello") + record_of("b.txt", "bye") + content_of(1, "bye");
  t.agent->on_request([&](LyingAgent& a, const protocol::Request& r) {
    a.reply(r.id, json{{"manifest", 9}, {"entries", 2}, {"bytes", 8}, {"hashed", 2}, {"cached", 0}, {"skipped", 0}, {"body", body.size()},
                       {"data", wire::base64_encode(body)}, {"inlined", 1}, {"inlineBytes", 3}, {"since", 1}, {"agentMs", 42}});
  });
  wire::WorkspaceManifestParams p;
  p.since = 1;
  p.inline_content = wire::InlineBounds{};
  std::optional<Result<channel::WorkspaceManifest>> got;
  t.client->manifest(p, [&](Result<channel::WorkspaceManifest> r) { got.emplace(std::move(r)); });
  REQUIRE(t.loop.run_until([&] { return got.has_value(); }));
  REQUIRE(*got);
  REQUIRE((*got)->inlined.size() == 1);
  CHECK((*got)->inlined[0].entry == 1);
  CHECK((*got)->inlined[0].content == "bye");
  CHECK((*got)->summary.agent_ms == 42);  // the agent's own timing, passed on for the step table
  CHECK_FALSE(t.failure);
  CHECK(t.finish() == 0);
}
