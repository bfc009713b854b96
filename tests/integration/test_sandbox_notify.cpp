// What an editor is told without asking, and terminals, through the editor face's real code
// (SandboxMethods on an rpc::Connection over pipes, editor_session.h) with real guests:
// changes/changed when the guest's files change (and nothing when the editor only looks),
// network/policyChanged for a network/policy request, process/started for a kit's service never
// before the create answer (nor its output), sandboxId on process/*, process/list, sandbox/list's
// facts and labels, terminals (cwd, TERM, env order, closeStdin, the last output before the
// exit), and flow control against an editor that stops reading.
#include <fstream>

#include "tests/integration/editor_session.h"

using namespace lockroom;
using namespace lockroom::testing;
using protocol::json;
using Clock = std::chrono::steady_clock;

namespace {

// Turns the loop for `how_long` (a timer keeps it waking).
void idle(World& w, std::chrono::milliseconds how_long) {
  uv_timer_t tick;
  uv_timer_init(&w.loop, &tick);
  uv_timer_start(&tick, [](uv_timer_t*) {}, 20, 20);
  auto until = Clock::now() + how_long;
  w.run_until([&] { return Clock::now() >= until; }, how_long + 30s);
  uv_close(reinterpret_cast<uv_handle_t*>(&tick), nullptr);
  uv_run(&w.loop, UV_RUN_NOWAIT);
}

std::vector<json> for_sandbox(const std::vector<json>& notes, const std::string& id) {
  std::vector<json> out;
  for (const auto& n : notes)
    if (n.value("sandboxId", "") == id) out.push_back(n);
  return out;
}

// The index in `messages` of the first one `match` accepts, or -1.
template <typename Match>
long index_of(const std::vector<json>& messages, Match match) {
  for (std::size_t i = 0; i < messages.size(); ++i)
    if (match(messages[i])) return static_cast<long>(i);
  return -1;
}

// All process/output data of `pid`, and whether its process/exited came after every piece of it.
struct Output {
  std::string data;
  bool exited = false;
  bool output_after_exit = false;
};
Output output_of(const std::vector<json>& messages, const std::string& pid) {
  Output out;
  for (const auto& m : messages) {
    if (!m.contains("method") || m.contains("id")) continue;
    const json& p = m["params"];
    if (p.value("processId", "") != pid) continue;
    if (m["method"] == "process/output") {
      if (out.exited) out.output_after_exit = true;
      out.data += p.at("data").get<std::string>();
    }
    if (m["method"] == "process/exited") out.exited = true;
  }
  return out;
}

std::string start(Editor& editor, const json& params) {
  return editor.result("process/start", params).at("processId").get<std::string>();
}

void wait_exited(World& w, Editor& editor, const std::string& pid) {
  w.run_until([&] { return output_of(editor.messages, pid).exited; });
}

}  // namespace

TEST_CASE("notify: changes/changed when the guest's files change, not when the editor looks; network/policyChanged", "[sandbox][notify]") {
  World& w = world();
  HostRepo repo;
  Editor editor(w);
  EditorSandbox sb(w, editor, {{"path", repo.dir.path().string()}});
  idle(w, 800ms);  // whatever the import's checkout told has been told

  // An edit in the guest: told, for this sandbox, soon.
  editor.notifications.clear();
  sb.guest("echo fresh > fresh.txt");
  w.run_until([&] { return !for_sandbox(editor.notified("changes/changed"), sb.id).empty(); }, 10s);
  idle(w, 800ms);  // the trailing notice of that edit, if any
  auto told = for_sandbox(editor.notified("changes/changed"), sb.id);
  REQUIRE_FALSE(told.empty());
  for (std::size_t i = 1; i < told.size(); ++i) CHECK(told[i].at("version") > told[i - 1].at("version"));
  std::uint64_t version = told.back().at("version").get<std::uint64_t>();

  // The editor looking (list, diff) changes nothing and is told nothing: no loop.
  json listed = editor.result("changes/list", sb.params());
  CHECK(find_file(listed.at("files"), "fresh.txt"));
  idle(w, 1000ms);
  CHECK(for_sandbox(editor.notified("changes/changed"), sb.id).size() == told.size());

  // A discard (run in the guest) is a change too.
  editor.result("changes/discard", sb.params({{"paths", {"fresh.txt"}}}));
  w.run_until([&] { return for_sandbox(editor.notified("changes/changed"), sb.id).size() > told.size(); }, 10s);
  CHECK(for_sandbox(editor.notified("changes/changed"), sb.id).back().at("version").get<std::uint64_t>() > version);

  // A network/policy request that replaces the policy is told, with the whole new policy.
  json policy{{"rules", json::array({json{{"action", "allow"}, {"host", "example.org"}, {"ports", {443}}, {"name", "mine"}}})},
              {"defaultAllow", false}};
  json answer = editor.result("network/policy", sb.params({{"policy", policy}}));
  auto changed = for_sandbox(editor.notified("network/policyChanged"), sb.id);
  REQUIRE(changed.size() == 1);
  CHECK(changed[0].at("cause") == "request");
  CHECK(changed[0].at("policy") == answer.at("policy"));
  CHECK(changed[0].at("policy").at("rules")[0].at("name") == "mine");
  // Reading it tells nothing.
  editor.result("network/policy", sb.params());
  CHECK(for_sandbox(editor.notified("network/policyChanged"), sb.id).size() == 1);
}

TEST_CASE("notify: terminals and pipes start in /workspace, TERM, env order, closeStdin, last output before the exit, process/list", "[sandbox][notify]") {
  World& w = world();
  HostRepo repo;
  Editor editor(w);
  json created = editor.result("sandbox/create", {{"workspace", {{"path", repo.dir.path().string()}}},
                                                  {"env", {{"WHO", "sandbox"}, {"KEEP", "sandbox"}}},
                                                  {"label", "terminal test"}});
  std::string id = created.at("sandboxId").get<std::string>();
  auto params = [&](json extra) {
    extra["sandboxId"] = id;
    return extra;
  };

  // A terminal with no cwd: /workspace, TERM=xterm-256color, the request's env over the sandbox's.
  std::string pty = start(editor, params({{"argv", {"sh", "-c", "echo \"$PWD|$TERM|$WHO|$KEEP\""}}, {"pty", {{"cols", 80}, {"rows", 24}}},
                                          {"env", {{"WHO", "request"}}}}));
  wait_exited(w, editor, pty);
  Output pty_out = output_of(editor.messages, pty);
  CHECK(pty_out.data == "/workspace|xterm-256color|request|sandbox\r\n");
  CHECK_FALSE(pty_out.output_after_exit);
  // A pipe process with no cwd: /workspace too; a terminal whose env names TERM keeps it.
  std::string pipe = start(editor, params({{"argv", {"sh", "-c", "echo \"$PWD|${TERM-unset}\""}}}));
  std::string dumb = start(editor, params({{"argv", {"sh", "-c", "echo \"$TERM\""}}, {"pty", {{"cols", 80}, {"rows", 24}}},
                                           {"env", {{"TERM", "dumb"}}}}));
  wait_exited(w, editor, pipe);
  wait_exited(w, editor, dumb);
  CHECK(output_of(editor.messages, pipe).data.rfind("/workspace|", 0) == 0);
  CHECK(output_of(editor.messages, dumb).data == "dumb\r\n");

  // closeStdin on a terminal: Ctrl-D, which ends cat's input.
  std::string cat = start(editor, params({{"argv", {"cat"}}, {"pty", {{"cols", 80}, {"rows", 24}}}}));
  editor.result("process/write", {{"processId", cat}, {"data", "typed\n"}});
  w.run_until([&] { return output_of(editor.messages, cat).data.find("typed\r\n") != std::string::npos; }, 30s);
  editor.result("process/closeStdin", {{"processId", cat}});
  wait_exited(w, editor, cat);

  // A process that prints and exits at once: its last output comes before its exit, on pipes and
  // on a terminal alike.
  std::string quick = start(editor, params({{"argv", {"sh", "-c", "printf 'last words'"}}}));
  std::string quick_pty = start(editor, params({{"argv", {"sh", "-c", "printf 'last words'"}}, {"pty", {{"cols", 80}, {"rows", 24}}}}));
  wait_exited(w, editor, quick);
  wait_exited(w, editor, quick_pty);
  for (const auto& p : {quick, quick_pty}) {
    Output o = output_of(editor.messages, p);
    CHECK(o.data == "last words");
    CHECK_FALSE(o.output_after_exit);
  }

  // process/* notifications carry the sandbox.
  for (const auto& m : editor.messages)
    if (m.contains("method") && m["method"].get<std::string>().rfind("process/", 0) == 0) CHECK(m["params"].at("sandboxId") == id);

  // process/list: every one of them, in start order, exited with its exit; one still running.
  std::string sleeper = start(editor, params({{"argv", {"sleep", "100"}}, {"cwd", "/tmp"}}));
  json listed = editor.result("process/list", params(json::object()));
  const json& processes = listed.at("processes");
  REQUIRE(processes.size() == 7);
  CHECK(processes[0].at("processId") == pty);
  CHECK(processes[0].at("cwd") == "/workspace");
  CHECK(processes[0].at("pty") == true);
  CHECK(processes[0].at("origin") == "client");
  CHECK(processes[0].at("running") == false);
  CHECK(processes[0].at("exit") == json{{"exitCode", 0}});
  CHECK(processes[6].at("processId") == sleeper);
  CHECK(processes[6].at("argv") == json::array({"sleep", "100"}));
  CHECK(processes[6].at("cwd") == "/tmp");
  CHECK(processes[6].at("running") == true);
  CHECK_FALSE(processes[6].contains("exit"));
  CHECK(processes[6].at("startedAt").get<std::int64_t>() >= processes[0].at("startedAt").get<std::int64_t>());

  // sandbox/list: the workspace, the kits, the audit log, where its template came from, the label.
  auto entry = [&] {
    json all = editor.result("sandbox/list", json::object());
    for (const auto& s : all.at("sandboxes"))
      if (s.at("sandboxId") == id) return s;
    FAIL("not listed");
    return json();
  };
  json listed_sandbox = entry();
  CHECK(listed_sandbox.at("workspace") == repo.dir.path().string());
  CHECK(listed_sandbox.at("kits") == json::array());
  CHECK(listed_sandbox.at("auditLog").get<std::string>().find(id) != std::string::npos);
  CHECK(listed_sandbox.at("templateSource") == created.at("templateSource"));
  CHECK(listed_sandbox.at("label") == "terminal test");
  CHECK(editor.result("sandbox/setLabel", {{"sandboxId", id}, {"label", "renamed"}}).is_null());
  CHECK(entry().at("label") == "renamed");
  json bad = editor.error("sandbox/setLabel", {{"sandboxId", id}, {"label", "two\nlines"}});
  CHECK(bad.at("code") == kInvalidParams);
  CHECK(has(bad.at("message").get<std::string>(), "label"));
  w.destroy(id);
}

TEST_CASE("notify: a kit's services are told after the create answer, with their output after it", "[sandbox][notify][kits]") {
  World& w = world();
  TempDir dir{"lockroom-kit"};
  dir.write("kit.yaml", R"(name: chatty
services:
  - {name: talker, run: "sh -c 'echo service up; sleep 1000'", cwd: /}
  - {name: second, run: sleep 1000, cwd: /}
  - {name: third, run: sleep 1000, cwd: /}
)");
  Editor editor(w);
  int create_id = editor.next_id();
  json created = editor.result("sandbox/create", {{"kits", {(dir / "kit.yaml").string()}}, {"network", false}});
  std::string id = created.at("sandboxId").get<std::string>();
  const json& services = created.at("kits").at("services");
  REQUIRE(services.size() == 3);
  std::string talker = services[0].at("processId").get<std::string>();
  w.run_until([&] { return output_of(editor.messages, talker).data == "service up\n"; }, 30s);

  long answer = index_of(editor.messages, [&](const json& m) { return m.contains("id") && m["id"] == create_id; });
  long started = index_of(editor.messages, [&](const json& m) {
    return m.value("method", "") == "process/started" && m["params"].at("processId") == talker;
  });
  long output = index_of(editor.messages, [&](const json& m) {
    return m.value("method", "") == "process/output" && m["params"].at("processId") == talker;
  });
  REQUIRE(answer >= 0);
  REQUIRE(started >= 0);
  CHECK(answer < started);
  CHECK(started < output);
  json info = editor.messages[static_cast<std::size_t>(started)].at("params");
  CHECK(info.at("sandboxId") == id);
  CHECK(info.at("origin") == "kitService");
  CHECK(info.at("name") == "talker");
  CHECK(info.at("running") == true);
  CHECK(editor.notified("process/started").size() == 3);  // the services only, not the setup steps
  w.destroy(id);
}

TEST_CASE("notify: flow control holds a fast producer's output in the guest while the editor does not read", "[sandbox][notify]") {
  World& w = world();
  Editor editor(w);
  json created = editor.result("sandbox/create", {{"network", false}});
  std::string id = created.at("sandboxId").get<std::string>();
  constexpr std::size_t kBytes = 8u << 20;
  const std::string line = "lockroom-flow-1\n";  // 16 bytes: kBytes is a whole number of them
  std::string producer = start(editor, {{"sandboxId", id}, {"argv", {"sh", "-c", "yes lockroom-flow-1 | head -c " + std::to_string(kBytes)}}});

  // The editor stops reading for a while: what waits for it stays bounded.
  editor.pause_reading(true);
  std::size_t most = 0;
  uv_timer_t sample;
  uv_timer_init(&w.loop, &sample);
  sample.data = &most;
  auto until = Clock::now() + 5s;
  uv_timer_start(&sample, [](uv_timer_t*) {}, 10, 10);
  w.run_until([&] {
    most = std::max(most, editor.server_queued_bytes());
    return Clock::now() >= until;
  }, 60s);
  uv_close(reinterpret_cast<uv_handle_t*>(&sample), nullptr);
  INFO("most bytes queued for the editor: " << most);
  CHECK(most > api::SandboxMethods::kOutputHighMark);    // the producer did outrun the editor
  CHECK(most < api::SandboxMethods::kOutputHighMark + (512u << 10));  // and was stopped there
  CHECK_FALSE(output_of(editor.messages, producer).exited);

  // Reading again: everything arrives, in order, and the exit after the last of it.
  editor.pause_reading(false);
  wait_exited(w, editor, producer);
  Output out = output_of(editor.messages, producer);
  CHECK(out.data.size() == kBytes);
  bool in_order = out.data.size() == kBytes;
  for (std::size_t i = 0; in_order && i < out.data.size(); i += line.size()) in_order = out.data.compare(i, line.size(), line) == 0;
  CHECK(in_order);
  CHECK_FALSE(out.output_after_exit);
  w.destroy(id);
}
