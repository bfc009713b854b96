// changes/apply in branch mode and workspace/sync as JSON-RPC, with real guests, through the
// Editor of editor_session.h: the agent's changes are committed to a branch of the host
// repository without touching its checkout (the default name, a chosen one, a selection, force),
// and the user's host edits are brought into the guest without losing the agent's, or refused
// by name when both edited a file. The checks are on the host's git refs, its checkout and the
// guest's tree. The other workspace methods: test_sandbox_workspace_methods.cpp.
#include <set>

#include "tests/integration/editor_session.h"

using namespace lockroom;
using namespace lockroom::testing;
using protocol::json;

TEST_CASE("editor: branch mode commits without touching the checkout; workspace/sync brings host edits in", "[sandbox][workspace][editor]") {
  World& w = world();
  Editor editor(w);
  HostRepo repo;
  EditorSandbox s(w, editor, repo.dir.path().string());
  const json id = s.params();
  s.guest("sed -i 's/^line 3$/line 3 from the agent/' big.txt && echo agent > agent.txt");
  const std::string agent_big = numbered_lines(40, {{3, "line 3 from the agent"}});
  std::string head = repo.git("rev-parse HEAD");
  std::string status = repo.git("status --porcelain");
  std::string checkout = repo.worktree_fingerprint();
  auto checkout_untouched = [&] {
    CHECK(repo.git("rev-parse HEAD") == head);
    CHECK(repo.git("status --porcelain") == status);
    CHECK(repo.worktree_fingerprint() == checkout);
  };

  // --- branch mode, default name: the sandbox id. The workspace had an uncommitted edit and
  // untracked files: they get a commit of their own on the user's HEAD, the sandbox's work one on top.
  // Apply names the view the editor reviewed.
  const json view = editor.result("changes/list", id).at("viewId");
  auto with = [&](json extra) {
    extra["viewId"] = view;
    return s.params(std::move(extra));
  };
  json saved = editor.result("changes/apply", with({{"mode", "branch"}}));
  INFO(saved.dump());
  std::string ref = "refs/heads/lockroom/" + s.id;
  CHECK(saved.at("created") == true);
  CHECK(saved.at("branch") == ref);
  CHECK(saved.at("conflicts").empty());
  CHECK(saved.at("refused").empty());
  CHECK(repo.git("rev-parse " + ref) == saved.at("commit").get<std::string>() + "\n");
  REQUIRE(saved.contains("snapshotCommit"));
  CHECK(repo.git("rev-parse " + ref + "^") == saved.at("snapshotCommit").get<std::string>() + "\n");
  CHECK(repo.git("rev-parse " + ref + "^^") == head);
  CHECK(repo.git("show " + ref + ":agent.txt") == "agent\n");
  CHECK(repo.git("show " + ref + ":big.txt") == agent_big);
  CHECK(repo.git("show " + ref + ":notes.txt") == "keep me\nuncommitted edit\n");  // the user's edit, not lost
  // The tip is the sandbox's work alone; the user's uncommitted and untracked files are below it,
  // without the secrets the snapshot withheld.
  CHECK(repo.git("diff --name-only " + ref + "^ " + ref) == "agent.txt\nbig.txt\n");
  CHECK(repo.git("diff --name-only " + ref + "^^ " + ref + "^") == "config/app.secret\nnotes.txt\n");
  checkout_untouched();

  // --- a chosen name and a selection; an existing branch needs force.
  json review = editor.result("changes/apply", with({{"mode", "branch"}, {"branch", "review"}, {"select", {{{"path", "agent.txt"}}}}}));
  CHECK(review.at("branch") == "refs/heads/lockroom/review");
  CHECK(repo.git("show lockroom/review:agent.txt") == "agent\n");
  CHECK(repo.git("show lockroom/review:big.txt") == kBigBase);  // not selected
  check_failed(editor.error("changes/apply", with({{"mode", "branch"}, {"branch", "review"}})), "wrongState",
               "lockroom/review already exists");
  CHECK(repo.git("rev-parse lockroom/review") == review.at("commit").get<std::string>() + "\n");
  json forced = editor.result("changes/apply", with({{"mode", "branch"}, {"branch", "review"}, {"force", true}}));
  CHECK(forced.at("commit") != review.at("commit"));
  CHECK(repo.git("rev-parse lockroom/review") == forced.at("commit").get<std::string>() + "\n");
  CHECK(repo.git("show lockroom/review:big.txt") == agent_big);
  json bad_name = editor.error("changes/apply", with({{"mode", "branch"}, {"branch", "a..b"}}));
  CHECK(bad_name.at("code") == kInvalidParams);
  CHECK(has(bad_name.at("message").get<std::string>(), "'a..b' cannot name a git branch"));
  checkout_untouched();

  // --- workspace/sync: the user's edits reach the guest, the agent's stay, the base moves on.
  repo.dir.write("host.txt", "from the host\n");
  repo.dir.write("config/app.yaml", "name: demo\nport: 8080\n");
  json synced = editor.result("workspace/sync", id);
  INFO(synced.dump());
  std::string commit = synced.at("commit");
  CHECK(commit.size() == 40);
  CHECK(commit != s.created.at("workspace").at("commit").get<std::string>());
  CHECK(synced.at("files") == 9);
  CHECK(strings_of(synced.at("withheld")) == std::set<std::string>{".env", ".env.example"});
  const json& transfer = synced.at("transfer");
  CHECK(transfer.at("objects").get<int>() >= 2);  // two blobs, their trees, the commit: only what changed
  CHECK(transfer.at("objects").get<int>() <= 5);
  CHECK(transfer.at("packBytes").get<int>() > 0);
  CHECK(transfer.contains("packMs"));
  CHECK(transfer.contains("importMs"));
  CHECK(s.guest("git rev-parse HEAD") == commit + "\n");
  CHECK(s.guest("cat host.txt config/app.yaml") == "from the host\nname: demo\nport: 8080\n");
  CHECK(s.guest("cat agent.txt") == "agent\n");
  CHECK(s.guest("sed -n 3p big.txt") == "line 3 from the agent\n");
  json list = editor.result("changes/list", id);
  CHECK(paths_of(list.at("files")) == std::set<std::string>{"agent.txt", "big.txt"});  // the host's edits are the base now

  // An agent edit where the user edited too: nothing changes in the guest, the file is named.
  s.guest("echo 'agent notes' >> notes.txt");
  repo.dir.write("notes.txt", "keep me\nhost line\n");
  check_failed(editor.error("workspace/sync", id), "wrongState", "notes.txt");
  CHECK(s.guest("cat notes.txt") == "keep me\nuncommitted edit\nagent notes\n");
  CHECK(s.guest("git rev-parse HEAD") == commit + "\n");

  check_failed(editor.error("workspace/sync", {{"sandboxId", "sb-nope"}}), "notFound", "sb-nope");
  check_failed(editor.error("changes/list", {{"sandboxId", "sb-nope"}}), "notFound", "sb-nope");
}
