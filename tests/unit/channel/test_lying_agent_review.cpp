// A lying agent's manifest through a whole review (SandboxWorkspace::refresh on a real snapshot
// of a real git repository): entries that name paths outside the workspace or in .git, a device,
// a file over the size limit are refused one by one, each with its reason; the rest is reviewed
// as usual; a refused file the snapshot holds shows no change (it is not read as deleted, so
// applying everything cannot delete it on the host); the guest is reported as misbehaving; the
// channel stays up.
#include <chrono>
#include <fstream>
#include <iterator>

#include "guest/workspace_hash.h"
#include "protocol/channel/base64.h"
#include "server/core/sandbox_workspace.h"
#include "tests/support/shell.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/channel/lying_world.h"

using namespace lockroom;
using namespace lockroom::testing;
using protocol::json;
namespace wire = protocol::channel;
namespace review = workspace::review;

namespace {

std::string record(const std::string& path, std::uint32_t mode, const std::string& id, std::uint64_t size) {
  std::string out;
  wire::append_manifest_record(out, wire::ManifestEntry{path, mode, id, size});
  return out;
}

const review::EntryRefusal* refusal_of(const core::ChangeSet& set, const std::string& path) {
  for (const auto& r : set.refused)
    if (r.path == path) return &r;
  return nullptr;
}

// The workspace of a sandbox on `host` (a git repository), its store under `cache`, as a
// sandbox's creation makes it; the loop runs until the snapshot is taken.
std::unique_ptr<core::SandboxWorkspace> snapshot_of(LyingWorld& t, const TempDir& host, const TempDir& cache,
                                                     core::WorkspaceRequest request = {}) {
  request.path = host.path().string();
  std::unique_ptr<core::SandboxWorkspace> ws;
  std::optional<Error> failed;
  core::SandboxWorkspace::snapshot(t.loop.get(), cache.path(), request, [&](Result<std::unique_ptr<core::SandboxWorkspace>> r) {
    if (r) ws = std::move(*r);
    else failed = r.error();
  });
  REQUIRE(t.loop.run_until([&] { return ws || failed; }, std::chrono::seconds(60)));
  INFO((failed ? failed->message : std::string()));
  REQUIRE(ws);
  return ws;
}

}  // namespace

TEST_CASE("lying agent: a review refuses bad entries one by one and keeps the rest, the channel stays up", "[channel][hostile][workspace]") {
  TempDir host("lockroom-lying-review"), cache("lockroom-lying-cache");
  host.write("hello.txt", "hello\n");
  host.write("keep.txt", "keep\n");
  host.write("big.bin", "small for now\n");
  sh("cd '" + host.path().string() + "' && git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -q -m base");

  LyingWorld t;
  t.wait_ready();
  auto& agent = t.agent_client();

  core::WorkspaceRequest request;
  request.limits.max_file_bytes = 1 << 20;
  auto ws = snapshot_of(t, host, cache, request);

  // The guest's tree as a lying agent tells it: hello.txt moved to moved.txt (a blob the store
  // has: no export), keep.txt as it was, and five entries lockroom must refuse.
  const std::string hello = agent::blob_id("hello\n"), keep = agent::blob_id("keep\n");
  std::string body = record("../escape", wire::kModeFile, hello, 6) +                 // outside the workspace
                     record(".git/hooks/post-checkout", wire::kModeExecutable, hello, 6) +  // a hook
                     record("/etc/passwd", wire::kModeFile, hello, 6) +              // absolute
                     record("big.bin", wire::kModeFile, std::string(40, '0'), 1ull << 40) +  // over the limit, unread
                     record("dev", 0020644, hello, 6) +                             // a character device
                     record("keep.txt", wire::kModeFile, keep, 5) + record("moved.txt", wire::kModeFile, hello, 6);
  int manifests = 0;
  t.agent->on_request([&](LyingAgent& a, const protocol::Request& r) {
    if (r.method != wire::method::kWorkspaceManifest) return a.reply_error(r.id, -32601, "not scripted: " + r.method);
    manifests++;
    // Every size counts in "bytes" but the one over the limit.
    a.reply(r.id, json{{"manifest", manifests}, {"entries", 7}, {"bytes", 6 * 4 + 5 + 6}, {"hashed", 7}, {"cached", 0}, {"skipped", 0},
                       {"body", body.size()}, {"data", wire::base64_encode(body)}});
  });
  std::vector<core::MisbehaviourEvent> reported;
  ws->on_refused([&](const core::MisbehaviourEvent& e) { reported.push_back(e); });
  std::optional<Result<core::ChangeSet>> got;
  ws->refresh(agent, [&](Result<core::ChangeSet> r) { got.emplace(std::move(r)); });
  REQUIRE(t.loop.run_until([&] { return got.has_value(); }, std::chrono::seconds(60)));
  REQUIRE(*got);
  const core::ChangeSet& set = **got;
  // Reported as a misbehaving guest, once for this review.
  REQUIRE(reported.size() == 1);
  CHECK(reported[0].count == 5);
  CHECK(reported[0].entries.size() == 5);
  CHECK_THAT(reported[0].message, Catch::Contains("5 entries lockroom refused"));

  // Each refused entry by name, with what is wrong with it.
  REQUIRE(set.refused.size() == 5);
  REQUIRE(refusal_of(set, "../escape"));
  CHECK_THAT(refusal_of(set, "../escape")->reason, Catch::Contains("'..'"));
  REQUIRE(refusal_of(set, ".git/hooks/post-checkout"));
  CHECK_THAT(refusal_of(set, ".git/hooks/post-checkout")->reason, Catch::Contains(".git"));
  REQUIRE(refusal_of(set, "/etc/passwd"));
  CHECK_THAT(refusal_of(set, "/etc/passwd")->reason, Catch::Contains("absolute"));
  REQUIRE(refusal_of(set, "big.bin"));
  CHECK_THAT(refusal_of(set, "big.bin")->reason, Catch::Contains("1099511627776 bytes, over the limit of 1048576"));
  REQUIRE(refusal_of(set, "dev"));
  CHECK_THAT(refusal_of(set, "dev")->reason, Catch::Contains("mode 020644"));

  // The rest is reviewed: the rename, and nothing else. big.bin keeps the snapshot's version (no
  // deletion to apply); keep.txt is unchanged.
  const auto& files = set.changes->list();
  REQUIRE(files.size() == 1);
  CHECK(files[0].status == review::ChangeStatus::kRenamed);
  CHECK(files[0].old_path == "hello.txt");
  CHECK(files[0].path == "moved.txt");
  CHECK(set.changes->find("big.bin") == nullptr);
  CHECK(set.blobs_fetched == 0);

  // The channel is up: the sandbox goes on, and the next review asks again (a whole listing,
  // since a view with refusals is not kept).
  CHECK_FALSE(t.failure);
  got.reset();
  ws->refresh(agent, [&](Result<core::ChangeSet> r) { got.emplace(std::move(r)); });
  REQUIRE(t.loop.run_until([&] { return got.has_value(); }, std::chrono::seconds(60)));
  REQUIRE(*got);
  CHECK(manifests == 2);
  CHECK((*got)->refused.size() == 5);
  CHECK_FALSE((*got)->steps.partial);

  // The host workspace is as it was.
  std::ifstream big(host / "big.bin", std::ios::binary);
  CHECK(std::string(std::istreambuf_iterator<char>(big), {}) == "small for now\n");
  CHECK(std::filesystem::exists(host / "hello.txt"));
  ws.reset();
  CHECK(t.finish() == 0);
}

TEST_CASE("lying agent: a delta is rebuilt from the view's version; one that does not make its id is fetched whole", "[channel][hostile][workspace]") {
  TempDir host("lockroom-delta-review"), cache("lockroom-delta-cache");
  const std::string base = "hello\nworld\n";
  host.write("a.txt", base);
  sh("cd '" + host.path().string() + "' && git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -q -m base");

  LyingWorld t;
  t.wait_ready();
  auto& agent = t.agent_client();
  auto ws = snapshot_of(t, host, cache);

  // What the lying agent answers: its whole tree first, then partial manifests whose inline
  // content is `inline_part` for a.txt as `now`.
  std::string now = base, inline_part;
  std::string exported;  // what workspace.export sends for a.txt, when asked
  int manifests = 0, exports = 0;
  t.agent->on_request([&](LyingAgent& a, const protocol::Request& r) {
    if (r.method == wire::method::kWorkspaceExport) {
      exports++;
      std::uint32_t s = a.open_stream();
      a.reply(r.id, json{{"stream", s}, {"count", 1}});
      std::string body;
      wire::append_export_header(body, 0, wire::kModeFile, exported.size());
      std::string raw_id;
      const std::string hex = agent::blob_id(exported);
      for (std::size_t i = 0; i < 40; i += 2) raw_id.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
      a.send_data(s, body + exported + raw_id);
      a.send_frame(protocol::channel::Kind::kClose, 0, s, "");
      return;
    }
    manifests++;
    std::string body = record("a.txt", wire::kModeFile, agent::blob_id(now), now.size());
    json result{{"manifest", manifests}, {"entries", 1}, {"bytes", now.size()}, {"hashed", 1}, {"cached", 0}, {"skipped", 0}};
    if (manifests > 1) {
      result["since"] = manifests - 1;
      body += inline_part;
      result["inlined"] = 1;
      result["inlineBytes"] = inline_part.size() - 4;
    }
    result["body"] = body.size();
    result["data"] = wire::base64_encode(body);
    a.reply(r.id, result);
  });
  auto refresh = [&] {
    std::optional<Result<core::ChangeSet>> got;
    ws->refresh(agent, [&](Result<core::ChangeSet> r) { got.emplace(std::move(r)); });
    REQUIRE(t.loop.run_until([&] { return got.has_value(); }, std::chrono::seconds(60)));
    INFO((*got ? std::string() : got->error().message));
    REQUIRE(*got);
    return std::move(**got);
  };
  CHECK(refresh().changes->list().empty());  // the view: a.txt as in the snapshot

  // A delta against the view's a.txt: 6 bytes kept before, 6 after, "there\n" carried.
  now = "hello\nthere\nworld\n";
  inline_part.clear();
  wire::append_inline_delta(inline_part, 0, wire::InlineDelta{6, 6}, "there\n");
  auto set = refresh();
  CHECK(set.steps.partial);
  CHECK(set.steps.inlined == 1);
  CHECK(set.steps.exported == 0);
  auto content = set.changes->content("a.txt", review::Side::kCurrent);
  REQUIRE(content.ok());
  CHECK(content->bytes == now);

  // A delta that makes other bytes than its record's id: not taken; the file is exported whole.
  std::string lie;
  wire::append_inline_delta(lie, 0, wire::InlineDelta{6, 6}, "THERE\nagain\n");
  now = "hello\nthere\nagain\nworld\n";
  inline_part = lie;
  exported = now;
  auto fetched = refresh();
  CHECK(exports == 1);
  CHECK(fetched.steps.inlined == 0);
  CHECK(fetched.steps.exported == 1);
  auto whole = fetched.changes->content("a.txt", review::Side::kCurrent);
  REQUIRE(whole.ok());
  CHECK(whole->bytes == now);
  CHECK_FALSE(t.failure);
  ws.reset();
  CHECK(t.finish() == 0);
}
