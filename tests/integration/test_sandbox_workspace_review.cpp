// Safe review through the editor face, with real guests (protocol/workspace.md, "Views", "The
// base moves", "Rejecting hunks", "Cancellation"): changes/apply writes exactly the view it
// names, whatever was listed since; views of two clients do not replace each other and are
// bounded; a worktree apply moves the base so the next listing shows only what is still to
// decide; changes/discard rejects single hunks in the guest, only while the guest's file is what
// the view showed; a cancelled apply either did nothing (-32800) or finishes and answers what it
// wrote, and a cancelled sync changes nothing in the guest; $/progress says which.
#include <uv.h>

#include <filesystem>
#include <iterator>

#include "tests/integration/editor_session.h"

using namespace lockroom;
using namespace lockroom::testing;
using protocol::json;
namespace fs = std::filesystem;

namespace {

// Wakes the loop every millisecond while it lives, so run_until can watch the host's files.
class Ticker {
 public:
  explicit Ticker(World& w) : w_(w) {
    uv_timer_init(&w.loop, timer_);
    uv_timer_start(timer_, [](uv_timer_t*) {}, 1, 1);
  }
  ~Ticker() {
    bool closed = false;
    timer_->data = &closed;
    uv_close(reinterpret_cast<uv_handle_t*>(timer_), [](uv_handle_t* h) {
      *static_cast<bool*>(h->data) = true;
      delete reinterpret_cast<uv_timer_t*>(h);
    });
    while (!closed) uv_run(&w_.loop, UV_RUN_ONCE);
  }

 private:
  World& w_;
  uv_timer_t* timer_ = new uv_timer_t;
};

// The hunks of the one file of a changes/diff answer.
const json& hunks_of(const json& diff) { return diff.at("files").at(0).at("hunks"); }

// The lines of a hunk as "-text"/"+text" (context left out).
std::vector<std::string> edits_of(const json& hunk) {
  std::vector<std::string> out;
  for (const auto& l : hunk.at("lines"))
    if (l.at("origin") != " ") out.push_back(l.at("origin").get<std::string>() + l.at("text").get<std::string>());
  return out;
}

// The $/progress values sent under `token`, in order.
std::vector<json> progress_of(const Editor& editor, const std::string& token) {
  std::vector<json> out;
  for (const auto& p : editor.notified("$/progress"))
    if (p.at("token") == token) out.push_back(p.at("value"));
  return out;
}

std::size_t files_in(const fs::path& dir) {
  if (!fs::exists(dir)) return 0;
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

}  // namespace

TEST_CASE("editor: apply writes exactly the view it names, views are kept per client, the base moves, hunks are rejected in the guest",
          "[sandbox][workspace][editor]") {
  World& w = world();
  Editor editor(w);
  HostRepo repo;
  EditorSandbox s(w, editor, repo.dir.path().string());

  s.guest("sed -i 's/^line 3$/line 3 A/' big.txt && echo one > n.txt");
  json a = editor.result("changes/diff", s.params());  // what the editor shows the user
  const std::string va = a.at("viewId");
  CHECK_FALSE(va.empty());
  // The agent writes more; another client (a terminal's `lockroom diff`) lists after it.
  s.guest("sed -i 's/^line 3 A$/line 3 B/' big.txt && echo two > n.txt");
  json b = editor.result("changes/list", s.params());
  const std::string vb = b.at("viewId");
  CHECK(vb != va);

  // Applying the editor's view writes the bytes it showed, never the newer ones.
  json applied = editor.result("changes/apply", s.params({{"viewId", va}}));
  INFO(applied.dump());
  CHECK(applied.at("counts") == json{{"applied", 2}});
  CHECK(repo.read("big.txt") == numbered_lines(40, {{3, "line 3 A"}}));
  CHECK(repo.read("n.txt") == "one\n");

  // The other client's view is still kept and answers from its own moment ...
  json b_diff = editor.result("changes/diff", s.params({{"viewId", vb}, {"path", "big.txt"}}));
  CHECK(b_diff.at("viewId") == vb);
  CHECK(edits_of(hunks_of(b_diff).at(0)) == std::vector<std::string>{"-line 3\n", "+line 3 B\n"});
  // ... but the base of both its files moved under it: applying it is refused per file.
  json refused = editor.result("changes/apply", s.params({{"viewId", vb}}));
  INFO(refused.dump());
  CHECK(refused.at("counts") == json{{"refused", 2}});
  CHECK(has(find_file(refused.at("files"), "n.txt")->at("reason").get<std::string>(), "changed since you reviewed it"));
  CHECK(repo.read("n.txt") == "one\n");

  // A fresh look shows what is still to decide: the agent's later edits against what was applied.
  json c = editor.result("changes/diff", s.params({{"path", "big.txt"}}));
  CHECK(edits_of(hunks_of(c).at(0)) == std::vector<std::string>{"-line 3 A\n", "+line 3 B\n"});
  CHECK(editor.result("changes/list", s.params({{"viewId", c.at("viewId")}})).at("files").size() == 2);
  json n_now = editor.result("changes/content", s.params({{"viewId", c.at("viewId")}, {"path", "n.txt"}, {"side", "base"}}));
  CHECK(n_now.at("data") == "one\n");  // the base of n.txt is what was applied

  // Views are bounded: eight newer ones push it out; then it is refused as a whole.
  for (int i = 0; i < 8; ++i) editor.result("changes/list", s.params());
  check_failed(editor.error("changes/apply", s.params({{"viewId", c.at("viewId")}})), "wrongState", "list again");
  check_failed(editor.error("changes/diff", s.params({{"viewId", c.at("viewId")}})), "wrongState", "no longer kept");
  CHECK(repo.read("n.txt") == "one\n");

  // --- rejecting one hunk in the guest: the file becomes the view's version without it.
  s.guest("sed -i 's/^line 20$/line 20 X/; s/^line 30$/line 30 Y/' big.txt");
  json d = editor.result("changes/diff", s.params({{"path", "big.txt"}}));
  REQUIRE(hunks_of(d).size() == 3);
  std::string keep_first = hunks_of(d)[0].at("id"), reject = hunks_of(d)[1].at("id"), keep_last = hunks_of(d)[2].at("id");
  json discarded = editor.result("changes/discard", s.params({{"viewId", d.at("viewId")}, {"select", {{{"path", "big.txt"}, {"hunks", {reject}}}}}}));
  CHECK(discarded == json{{"discarded", 1}});
  CHECK(s.guest("cat big.txt") == numbered_lines(40, {{3, "line 3 B"}, {30, "line 30 Y"}}));
  json e = editor.result("changes/diff", s.params({{"path", "big.txt"}}));
  REQUIRE(hunks_of(e).size() == 2);
  CHECK(hunks_of(e)[0].at("id") == keep_first);  // the others keep their ids
  CHECK(hunks_of(e)[1].at("id") == keep_last);
  // The discard changed the guest: every earlier view is gone.
  check_failed(editor.error("changes/apply", s.params({{"viewId", d.at("viewId")}})), "wrongState", "list again");
  // An unknown hunk is refused by id, before anything is written.
  json unknown = editor.error("changes/discard", s.params({{"viewId", e.at("viewId")}, {"select", {{{"path", "big.txt"}, {"hunks", {"0123456789abcdef"}}}}}}));
  CHECK(unknown.at("code") == kInvalidParams);
  CHECK(has(unknown.at("message").get<std::string>(), "0123456789abcdef"));
  // A guest file that changed since the view is not rewritten.
  s.guest("echo tail >> big.txt");
  check_failed(editor.error("changes/discard", s.params({{"viewId", e.at("viewId")}, {"select", {{{"path", "big.txt"}, {"hunks", {keep_first}}}}}})),
               "wrongState", "changed since you reviewed it");
  CHECK(s.guest("tail -n 1 big.txt") == "tail\n");
  CHECK(repo.read("big.txt") == numbered_lines(40, {{3, "line 3 A"}}));  // the host never moved
}

TEST_CASE("editor: a cancelled apply did nothing (-32800) or answers what it wrote; a cancelled sync changes nothing; $/progress tells",
          "[sandbox][workspace][editor]") {
  World& w = world();
  Editor editor(w);
  HostRepo repo;
  EditorSandbox s(w, editor, repo.dir.path().string());
  constexpr std::size_t kFiles = 300;
  s.guest("mkdir many && for i in $(seq 1 " + std::to_string(kFiles) + "); do echo agent $i > many/f$i.txt; done");
  json v = editor.result("changes/list", s.params({{"workDoneToken", "list-1"}}));
  REQUIRE(v.at("files").size() == kFiles);
  auto listed = progress_of(editor, "list-1");
  REQUIRE(listed.size() >= 2);
  CHECK(listed.front().at("kind") == "begin");
  CHECK(listed.back().at("kind") == "end");

  // 1. Queued behind a slow operation (a fresh listing: a look at the guest), then cancelled:
  // answered -32800 at once, nothing written.
  int slow = editor.send("changes/list", s.params());
  int queued = editor.send("changes/apply", s.params({{"viewId", v.at("viewId")}, {"workDoneToken", "apply-1"}}));
  editor.cancel(queued);
  json stopped = editor.wait(queued);
  INFO(stopped.dump());
  REQUIRE(stopped.contains("error"));
  CHECK(stopped.at("error").at("code") == -32800);
  CHECK_FALSE(editor.answered(slow));  // it was answered while still behind the listing
  CHECK(editor.wait(slow).contains("result"));
  CHECK_FALSE(fs::exists(repo.dir / "many"));
  auto first = progress_of(editor, "apply-1");
  REQUIRE(first.size() == 2);
  CHECK(first[0].at("kind") == "begin");
  CHECK(first[0].at("cancellable") == true);
  CHECK(first[1] == json{{"kind", "end"}, {"message", "cancelled"}});

  // 2. Cancelled once it began writing: it finishes and answers its real result.
  bool cancelled_while_writing = false;
  int writing = editor.send("changes/apply", s.params({{"viewId", v.at("viewId")}, {"workDoneToken", "apply-2"}}));
  {
    Ticker ticker(w);
    w.run_until([&] { return editor.answered(writing) || files_in(repo.dir / "many") > 0; });
    cancelled_while_writing = !editor.answered(writing);
    editor.cancel(writing);
    json done = editor.wait(writing);
    INFO(done.dump());
    REQUIRE(done.contains("result"));
    CHECK(done.at("result").at("counts") == json{{"applied", kFiles}});
  }
  CHECK(cancelled_while_writing);  // the cancel came between the first write and the answer
  CHECK(files_in(repo.dir / "many") == kFiles);
  CHECK(repo.read("many/f7.txt") == "agent 7\n");
  CHECK(progress_of(editor, "apply-2").back() == json{{"kind", "end"}, {"message", "done"}});
  // Applied: nothing left to decide.
  CHECK(editor.result("changes/list", s.params()).at("files").empty());

  // 3. workspace/sync cancelled before it reached the guest: the guest keeps its tree.
  repo.dir.write("host.txt", "from the host\n");
  int sync = editor.send("workspace/sync", s.params({{"workDoneToken", "sync-1"}}));
  editor.cancel(sync);
  json sync_stopped = editor.wait(sync);
  INFO(sync_stopped.dump());
  REQUIRE(sync_stopped.contains("error"));
  CHECK(sync_stopped.at("error").at("code") == -32800);
  CHECK(s.guest("test -e host.txt && echo there || echo absent") == "absent\n");
  CHECK(progress_of(editor, "sync-1").back() == json{{"kind", "end"}, {"message", "cancelled"}});
  // Not cancelled: the host's edits come in; the applied files are the new base, still in the guest.
  CHECK(editor.result("workspace/sync", s.params()).contains("commit"));
  CHECK(s.guest("cat host.txt many/f7.txt") == "from the host\nagent 7\n");
  CHECK(editor.result("changes/list", s.params()).at("files").empty());
}
