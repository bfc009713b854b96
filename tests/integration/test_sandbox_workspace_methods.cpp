// The editor face of workspaces (protocol/workspace.md) as JSON-RPC, with real guests, through the
// Editor of editor_session.h: it creates sandboxes with per-request secret options, a real agent
// edits the workspace (text, binary, non-UTF-8 content and name), and changes/list, changes/diff
// (one file, all, refresh:false), changes/content, changes/apply (hunks, worktree) and
// changes/discard are asked for as an editor would; an entry the review refuses reaches the
// editor as sandbox/misbehaved (protocol/sandboxes.md). The checks are on the host's files byte
// for byte and the guest's tree, not only on the shape of the answers. Branch mode and
// workspace/sync: test_sandbox_workspace_branch.cpp.
#include <algorithm>
#include <map>
#include <set>

#include "tests/integration/editor_session.h"

using namespace lockroom;
using namespace lockroom::testing;
using protocol::json;
namespace fs = std::filesystem;

namespace {

const std::string kAgentBinary("\xff\xfe" "bin\0ary\n", 10);  // what the guest's printf below writes

}  // namespace

TEST_CASE("editor: sandbox/create with a workspace answers its snapshot, per-request secret options honoured", "[sandbox][workspace][editor]") {
  World& w = world();
  Editor editor(w);
  HostRepo repo;
  std::string root = repo.dir.path().string();

  {
    EditorSandbox s(w, editor, {{"path", root}, {"withhold", {"*.secret"}}, {"allow", {".env.example"}}});
    const json& ws = s.created.at("workspace");
    INFO(s.created.dump());
    CHECK(ws.at("path") == "/workspace");
    CHECK(ws.at("host") == "git");
    CHECK(ws.at("branch") == "main");
    CHECK(strings_of(ws.at("withheld")) == std::set<std::string>{".env", "config/app.secret"});
    REQUIRE(ws.at("skipped").size() == 1);
    CHECK(ws.at("skipped")[0].at("path") == "pipe");
    CHECK(has(ws.at("skipped")[0].at("reason").get<std::string>(), "FIFO"));
    std::uint64_t bytes = 0;
    for (const char* f : {"big.txt", "data.bin", "latin1.txt", "gone.txt", "tool.sh", "notes.txt", "config/app.yaml", ".env.example"})
      bytes += fs::file_size(repo.dir / f);
    CHECK(ws.at("files") == 8);
    CHECK(ws.at("bytes") == bytes);
    CHECK(ws.at("transfer").at("objects").get<int>() > 0);
    CHECK(ws.at("transfer").at("packBytes").get<int>() > 0);
    CHECK(s.created.at("timings").contains("snapshotMs"));
    CHECK(s.created.at("timings").contains("importMs"));
    // The guest's HEAD is the snapshot the answer names, with exactly what it says.
    CHECK(s.guest("git rev-parse HEAD") == ws.at("commit").get<std::string>() + "\n");
    CHECK(s.guest("git ls-files | wc -l | tr -d ' '") == "8\n");
    CHECK(s.guest("test ! -e .env && test ! -e config/app.secret && cat .env.example") == "API_KEY=\n");
    CHECK(s.guest("cat notes.txt") == "keep me\nuncommitted edit\n");
  }
  {
    // A folder that is not a repository, with only the request's patterns: the default list is
    // replaced, so .env goes in.
    TempDir plain{"lockroom-editor-plain"};
    plain.write(".env", "API_KEY=do-not-copy\n");
    plain.write("notes.txt", "private\n");
    plain.write("src/app.py", "print('hi')\n");
    EditorSandbox s(w, editor, {{"path", plain.path().string()}, {"withhold", {"notes.txt"}}, {"replaceDefaultWithhold", true},
                                {"limits", {{"maxFiles", 100}}}});
    const json& ws = s.created.at("workspace");
    INFO(s.created.dump());
    CHECK(ws.at("host") == "folder");
    CHECK(ws.at("branch").is_null());
    CHECK(ws.at("withheld") == json::array({"notes.txt"}));
    CHECK(ws.at("skipped").empty());
    CHECK(ws.at("files") == 2);
    CHECK(ws.at("bytes") == 20 + 12);
    CHECK(s.guest("cat .env src/app.py") == "API_KEY=do-not-copy\nprint('hi')\n");
    CHECK(s.guest("test ! -e notes.txt && echo absent") == "absent\n");
  }

  // Over a request's limit: the create fails naming the offender; no sandbox is left.
  auto ready = [&] {
    auto all = w.manager->list();
    return std::count_if(all.begin(), all.end(), [](const core::SandboxSummary& s) { return s.state == core::SandboxState::kReady; });
  };
  auto before = ready();
  check_failed(editor.error("sandbox/create", {{"workspace", {{"path", root}, {"limits", {{"maxFileBytes", 100}}}}}}), "limitExceeded",
               "data.bin");
  CHECK(ready() == before);

  json relative = editor.error("sandbox/create", {{"workspace", "some/dir"}});
  CHECK(relative.at("code") == kInvalidParams);
  CHECK(has(relative.at("message").get<std::string>(), "\"workspace\" must be an absolute folder path"));
  json zero = editor.error("sandbox/create", {{"workspace", {{"path", root}, {"limits", {{"maxFiles", 0}}}}}});
  CHECK(zero.at("code") == kInvalidParams);
  CHECK(has(zero.at("message").get<std::string>(), "\"workspace.limits.maxFiles\""));
}

TEST_CASE("editor: changes are listed, diffed, read, applied by hunk and discarded over JSON-RPC", "[sandbox][workspace][editor]") {
  World& w = world();
  Editor editor(w);
  HostRepo repo;
  EditorSandbox s(w, editor, repo.dir.path().string());
  const json id = s.params();
  auto with = [&](json extra) { return s.params(std::move(extra)); };
  std::string untouched_host = repo.worktree_fingerprint();

  s.guest("sed -i 's/^line 3$/line 3 from the agent/; s/^line 37$/line 37 from the agent/' big.txt && "
          "printf '\\377\\376bin\\000ary\\n' > data.bin && printf 'caf\\351 au lait\\n' >> latin1.txt && rm gone.txt && "
          "chmod -x tool.sh && echo new > added.txt && echo odd > \"$(printf 'bad\\377name.txt')\"");
  const std::string agent_big = numbered_lines(40, {{3, "line 3 from the agent"}, {37, "line 37 from the agent"}});

  // --- changes/list
  json list = editor.result("changes/list", id);
  INFO(list.dump());
  const json& files = list.at("files");
  CHECK(paths_of(files) == std::set<std::string>{"big.txt", "data.bin", "latin1.txt", "gone.txt", "tool.sh", "added.txt"});
  const json* big = find_file(files, "big.txt");
  REQUIRE(big);
  CHECK(*big == json{{"path", "big.txt"}, {"status", "modified"}, {"binary", false}, {"added", 2}, {"removed", 2},
                     {"oldMode", "100644"}, {"newMode", "100644"}});
  CHECK(find_file(files, "data.bin")->at("binary") == true);
  CHECK(find_file(files, "latin1.txt")->at("added") == 1);
  CHECK(find_file(files, "gone.txt")->at("status") == "deleted");
  CHECK(find_file(files, "gone.txt")->at("newMode").is_null());
  const json* tool = find_file(files, "tool.sh");
  CHECK(tool->at("oldMode") == "100755");
  CHECK(tool->at("newMode") == "100644");
  CHECK(tool->at("added") == 0);
  CHECK(find_file(files, "added.txt")->at("oldMode").is_null());
  // A name the review cannot take is refused by name, printably; the rest is reviewed.
  REQUIRE(list.at("refused").size() == 1);
  CHECK(list.at("refused")[0].at("path") == "bad\\xffname.txt");
  CHECK(has(list.at("refused")[0].at("reason").get<std::string>(), "UTF-8"));
  CHECK(list.at("fetched").at("blobs").get<int>() >= 4);  // big, data, latin1, added: tool.sh's blob is the host's
  CHECK(list.at("fetched").at("bytes").get<int>() > 0);
  CHECK(list.at("ms").get<int>() >= 0);
  CHECK(repo.worktree_fingerprint() == untouched_host);  // looking changes nothing on the host
  // With a path, only what is at or under it; refresh: false answers from that same view.
  json some = editor.result("changes/list", with({{"path", "tool.sh"}, {"refresh", false}}));
  CHECK(paths_of(some.at("files")) == std::set<std::string>{"tool.sh"});
  CHECK(some.at("ms") == list.at("ms"));
  CHECK(some.at("refused") == list.at("refused"));
  CHECK(editor.result("changes/list", with({{"path", "config/"}, {"refresh", false}})).at("files").empty());

  // --- changes/diff of one file: two hunks with stable ids, and the patch.
  json one = editor.result("changes/diff", with({{"path", "big.txt"}}));
  REQUIRE(one.at("files").size() == 1);
  const json& big_diff = one.at("files")[0];
  CHECK(big_diff.at("status") == "modified");
  REQUIRE(big_diff.at("hunks").size() == 2);
  const json& first = big_diff.at("hunks")[0];
  const json& second = big_diff.at("hunks")[1];
  std::string first_id = first.at("id"), second_id = second.at("id");
  CHECK(first_id.size() == 16);
  CHECK(first_id != second_id);
  CHECK(first.at("header") == "@@ -1,6 +1,6 @@\n");
  CHECK((first.at("oldStart") == 1 && first.at("oldLines") == 6 && first.at("newStart") == 1 && first.at("newLines") == 6));
  REQUIRE(first.at("lines").size() == 7);
  CHECK(first.at("lines")[2] == json{{"origin", "-"}, {"text", "line 3\n"}});
  CHECK(first.at("lines")[3] == json{{"origin", "+"}, {"text", "line 3 from the agent\n"}});
  CHECK_THAT(second.at("header").get<std::string>(), Catch::StartsWith("@@ -34,7 +34,7 @@"));
  std::string patch = big_diff.at("patch");
  CHECK(has(patch, "diff --git a/big.txt b/big.txt\n"));
  CHECK(has(patch, "-line 37\n+line 37 from the agent\n"));
  check_failed(editor.error("changes/diff", with({{"path", "notes.txt"}})), "notFound", "notes.txt");

  // --- changes/diff of everything: the same hunks (same ids), non-UTF-8 text as base64.
  json all = editor.result("changes/diff", id);
  CHECK(paths_of(all.at("files")) == paths_of(files));
  CHECK(all.at("refused") == list.at("refused"));
  CHECK(find_file(all.at("files"), "big.txt")->at("hunks") == big_diff.at("hunks"));
  const json* latin = find_file(all.at("files"), "latin1.txt");
  REQUIRE(latin);
  CHECK(latin->at("patchEncoding") == "base64");
  CHECK(has(bytes_of(*latin, "patch"), "+caf\xe9 au lait\n"));
  const json& latin_lines = latin->at("hunks").at(0).at("lines");
  REQUIRE(latin_lines.size() == 2);
  CHECK(latin_lines[0].at("textEncoding") == "base64");
  CHECK(bytes_of(latin_lines[0], "text") == "caf\xe9\n");
  CHECK(latin_lines[1].at("origin") == "+");
  CHECK(bytes_of(latin_lines[1], "text") == "caf\xe9 au lait\n");
  const json* bin = find_file(all.at("files"), "data.bin");
  CHECK(bin->at("binary") == true);
  CHECK(bin->at("hunks").empty());

  // --- refresh:false answers from the last view; the agent's later edits wait for a refresh.
  s.guest("echo later > later.txt && sed -i 's/^line 20$/line 20 later/' big.txt");
  json stale = editor.result("changes/diff", with({{"refresh", false}}));
  CHECK(paths_of(stale.at("files")) == paths_of(files));
  CHECK(find_file(stale.at("files"), "big.txt")->at("hunks") == big_diff.at("hunks"));
  check_failed(editor.error("changes/content", with({{"path", "later.txt"}})), "notFound", "later.txt");  // content reads that view too
  json fresh = editor.result("changes/list", id);
  CHECK(find_file(fresh.at("files"), "later.txt"));
  CHECK(find_file(fresh.at("files"), "big.txt")->at("added") == 3);
  json big_now = editor.result("changes/diff", with({{"path", "big.txt"}, {"refresh", false}}));
  const json& hunks_now = big_now.at("files")[0].at("hunks");
  REQUIRE(hunks_now.size() == 3);
  CHECK(hunks_now[0].at("id") == first_id);  // untouched hunks keep their ids
  CHECK(hunks_now[2].at("id") == second_id);

  // --- changes/content: both sides, binary and non-UTF-8 as base64, modes.
  json base_bin = editor.result("changes/content", with({{"path", "data.bin"}, {"side", "base"}}));
  CHECK(base_bin.at("binary") == true);
  CHECK(base_bin.at("mode") == "100644");
  CHECK(base_bin.at("dataEncoding") == "base64");
  CHECK(bytes_of(base_bin, "data") == all_bytes());
  json current_bin = editor.result("changes/content", with({{"path", "data.bin"}}));  // side defaults to current
  CHECK(current_bin.at("side") == "current");
  CHECK(bytes_of(current_bin, "data") == kAgentBinary);
  json latin_now = editor.result("changes/content", with({{"path", "latin1.txt"}, {"side", "current"}}));
  CHECK(latin_now.at("binary") == false);
  CHECK(latin_now.at("dataEncoding") == "base64");
  CHECK(bytes_of(latin_now, "data") == "caf\xe9\ncaf\xe9 au lait\n");
  json big_text = editor.result("changes/content", with({{"path", "big.txt"}, {"side", "current"}}));
  CHECK_FALSE(big_text.contains("dataEncoding"));
  CHECK(big_text.at("data") == numbered_lines(40, {{3, "line 3 from the agent"}, {20, "line 20 later"}, {37, "line 37 from the agent"}}));
  CHECK(editor.result("changes/content", with({{"path", "tool.sh"}, {"side", "base"}})).at("mode") == "100755");
  CHECK(editor.result("changes/content", with({{"path", "tool.sh"}, {"side", "current"}})).at("mode") == "100644");
  CHECK(editor.result("changes/content", with({{"path", "gone.txt"}, {"side", "base"}})).at("data") == "to be deleted\n");
  check_failed(editor.error("changes/content", with({{"path", "gone.txt"}, {"side", "current"}})), "notFound", "gone.txt");
  CHECK(editor.error("changes/content", with({{"path", "big.txt"}, {"side", "theirs"}})).at("code") == kInvalidParams);
  check_failed(editor.error("changes/content", {{"sandboxId", "sb-nope"}, {"path", "big.txt"}}), "notFound", "sb-nope");
  CHECK(repo.worktree_fingerprint() == untouched_host);

  // --- changes/apply of one hunk of the view the editor reviewed: only that hunk lands in the host file.
  const json view = fresh.at("viewId");
  CHECK(big_now.at("viewId") == view);  // refresh:false answered from that view
  json one_hunk = editor.result("changes/apply", with({{"viewId", view}, {"select", {{{"path", "big.txt"}, {"hunks", {first_id}}}}}}));
  CHECK(one_hunk == json{{"mode", "worktree"}, {"files", {{{"path", "big.txt"}, {"status", "applied"}}}}, {"counts", {{"applied", 1}}}});
  CHECK(repo.read("big.txt") == numbered_lines(40, {{3, "line 3 from the agent"}}));
  CHECK(repo.read("data.bin") == all_bytes());  // nothing else moved
  CHECK(fs::exists(repo.dir / "gone.txt"));
  CHECK_FALSE(fs::exists(repo.dir / "added.txt"));

  // The base of big.txt moved: that view is out of date for it (refused by name), a path with
  // no change is refused too; the host is not touched.
  std::string after_hunk = repo.worktree_fingerprint();
  json refused = editor.result("changes/apply", with({{"viewId", view}, {"select", {{{"path", "big.txt"}, {"hunks", {second_id}}}, {{"path", "nope.txt"}}}}}));
  INFO(refused.dump());
  CHECK(refused.at("counts") == json{{"refused", 2}});
  CHECK(has(find_file(refused.at("files"), "big.txt")->at("reason").get<std::string>(), "changed since you reviewed it"));
  CHECK(has(find_file(refused.at("files"), "nope.txt")->at("reason").get<std::string>(), "not among the changed files"));
  CHECK(repo.worktree_fingerprint() == after_hunk);

  // The next listing shows what is still to decide: big.txt's other two hunks, same ids.
  json next = editor.result("changes/diff", with({{"path", "big.txt"}}));
  const json& left = next.at("files")[0].at("hunks");
  REQUIRE(left.size() == 2);
  CHECK(left[0].at("id") == hunks_now[1].at("id"));
  CHECK(left[1].at("id") == second_id);
  json stale_hunk = editor.result("changes/apply", with({{"viewId", next.at("viewId")}, {"select", {{{"path", "big.txt"}, {"hunks", {first_id}}}}}}));
  CHECK(has(find_file(stale_hunk.at("files"), "big.txt")->at("reason").get<std::string>(), "is not a hunk of big.txt"));

  // Everything else of that newer view: written as is (the host's big.txt is its base).
  json rest = editor.result("changes/apply", with({{"viewId", next.at("viewId")}, {"mode", "worktree"}}));
  INFO(rest.dump());
  CHECK(rest.at("counts") == json{{"applied", 7}});
  CHECK(repo.read("big.txt") == big_text.at("data").get<std::string>());
  CHECK(repo.read("data.bin") == kAgentBinary);
  CHECK(repo.read("latin1.txt") == "caf\xe9\ncaf\xe9 au lait\n");
  CHECK(repo.read("added.txt") == "new\n");
  CHECK(repo.read("later.txt") == "later\n");
  CHECK_FALSE(fs::exists(repo.dir / "gone.txt"));
  CHECK((fs::status(repo.dir / "tool.sh").permissions() & fs::perms::owner_exec) == fs::perms::none);
  CHECK_FALSE(fs::exists(repo.dir / "bad\xffname.txt"));  // refused by the review, never written
  CHECK(repo.read("notes.txt") == "keep me\nuncommitted edit\n");
  // Applied: nothing left to decide.
  CHECK(editor.result("changes/list", id).at("files").empty());

  // --- changes/discard of one path, then of everything, in the guest only: the guest goes back
  // to the snapshot, and so does the review's base (the host keeps what was applied).
  std::string applied_host = repo.worktree_fingerprint();
  CHECK(editor.result("changes/discard", with({{"paths", {"data.bin"}}})) == json{{"discarded", 1}});
  CHECK(s.guest("git status --porcelain -- data.bin") == "");
  CHECK(editor.result("changes/list", id).at("files").empty());
  s.guest("echo more >> added.txt");
  CHECK(paths_of(editor.result("changes/list", id).at("files")) == std::set<std::string>{"added.txt"});
  CHECK(editor.result("changes/discard", id) == json{{"discarded", 1}});  // the one change of the last view
  CHECK(s.guest("git status --porcelain --untracked-files=all") == "");
  json empty = editor.result("changes/list", id);
  CHECK(empty.at("files").empty());
  CHECK(empty.at("refused").empty());
  CHECK(repo.worktree_fingerprint() == applied_host);  // discarding never touches the host
}

TEST_CASE("editor: an entry the review refuses reaches the editor as sandbox/misbehaved, once per review", "[sandbox][workspace][editor]") {
  World& w = world();
  Editor editor(w);
  HostRepo repo;
  EditorSandbox s(w, editor, repo.dir.path().string());
  const json id = s.params();
  auto misbehaved = [&] { return editor.notified("sandbox/misbehaved"); };
  CHECK(misbehaved().empty());  // a snapshot is no review
  const std::size_t recorded = w.events.misbehaved.size();

  // One change the review takes, and a name it must refuse (not valid UTF-8).
  s.guest("echo 'agent notes' >> notes.txt && printf x > \"$(printf 'bad\\377name.txt')\"");
  json list = editor.result("changes/list", id);
  INFO(list.dump());
  CHECK(paths_of(list.at("files")) == std::set<std::string>{"notes.txt"});
  const json* notes = find_file(list.at("files"), "notes.txt");
  REQUIRE(notes);
  CHECK(notes->at("added") == 1);
  const std::string bad = "bad\\xffname.txt";  // printable: the byte spelled out
  REQUIRE(list.at("refused").size() == 1);
  CHECK(list.at("refused")[0].at("path") == bad);
  const std::string reason = list.at("refused")[0].at("reason");
  CHECK(has(reason, "UTF-8"));

  // The notification came before the answer: this sandbox, the workspace, the refused name.
  auto sent = misbehaved();
  REQUIRE(sent.size() == 1);
  const json& params = sent[0];
  INFO(params.dump());
  std::set<std::string> keys;
  for (const auto& [key, value] : params.items()) keys.insert(key);
  CHECK(keys == std::set<std::string>{"sandboxId", "source", "count", "entries", "message"});
  CHECK(params.at("sandboxId") == s.id);
  CHECK(params.at("source") == "workspace");
  CHECK(params.at("count") == 1);
  REQUIRE(params.at("entries").size() == 1);
  CHECK(params.at("entries")[0] == json{{"path", bad}, {"reason", reason}});
  const std::string message = params.at("message");
  CHECK(has(message, "listed 1 entry lockroom refused"));
  CHECK(has(message, bad + ": " + reason));
  // The manager's own record is kept too.
  REQUIRE(w.events.misbehaved.size() == recorded + 1);
  CHECK(w.events.misbehaved.back().first == s.id);

  // An answer from the last review (refresh: false) is no review: nothing more is sent.
  json same = editor.result("changes/list", s.params({{"refresh", false}}));
  CHECK(same.at("refused") == list.at("refused"));
  CHECK(misbehaved().size() == 1);

  // A new review with no new changes finds the entry again: one notification per review.
  json again = editor.result("changes/list", id);
  CHECK(paths_of(again.at("files")) == std::set<std::string>{"notes.txt"});
  CHECK(again.at("refused") == list.at("refused"));
  sent = misbehaved();
  REQUIRE(sent.size() == 2);
  CHECK(sent[1] == sent[0]);

  // Once the guest removes it, a review has nothing to refuse and the editor hears nothing.
  s.guest("rm \"$(printf 'bad\\377name.txt')\"");
  json clean = editor.result("changes/list", id);
  CHECK(paths_of(clean.at("files")) == std::set<std::string>{"notes.txt"});
  CHECK(clean.at("refused").empty());
  CHECK(misbehaved().size() == 2);
  CHECK(w.events.misbehaved.size() == recorded + 2);
}
