// The editor face of workspaces (protocol/workspace.md) as JSON-RPC, with real guests: an editor
// talks Content-Length JSON-RPC over pipes to the server's real rpc::Connection, with sandbox/*
// and the workspace methods bound to the world's manager as `lockroom serve` binds them. It
// creates sandboxes with per-request secret options, a real agent edits the workspace (text,
// binary, non-UTF-8 content and name), and changes/list, changes/diff (one file, all,
// refresh:false), changes/content, changes/apply (hunks, worktree, branch), changes/discard and
// workspace/sync are asked for as an editor would. The checks are on the host's files byte for
// byte, its git refs and the guest's tree, not only on the shape of the answers.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>

#include "protocol/channel/base64.h"
#include "server/api/sandbox_methods.h"
#include "server/api/workspace_methods.h"
#include "tests/integration/sandbox_world.h"
#include "tests/support/shell.h"
#include "tests/support/temp_dir.h"

using namespace lockroom;
using namespace lockroom::testing;
using protocol::json;
namespace fs = std::filesystem;

namespace {

constexpr int kRequestFailed = -32803;
constexpr int kInvalidParams = -32602;

// The editor's end of a real editor connection: lockroom's rpc::Connection (Content-Length
// framing) over two pipes, with sandbox/*, process/*, changes/* and workspace/sync bound to the
// world's manager. ask() writes one request and turns the loop until its reply arrives.
class Editor {
 public:
  explicit Editor(World& w) : w_(w) {
    int server_in[2], server_out[2];
    REQUIRE(pipe2(server_in, O_CLOEXEC) == 0);
    REQUIRE(pipe2(server_out, O_CLOEXEC) == 0);
    to_server_ = server_in[1];
    rpc::ConnectionOptions options;
    options.in_fd = server_in[0];
    options.out_fd = server_out[1];
    connection_ = std::make_unique<rpc::Connection>(&w.loop, options);
    methods_ = std::make_unique<api::SandboxMethods>(*connection_);
    methods_->bind(*w.manager, w.watch);
    api::bind_workspace_methods(*connection_, *w.manager);
    REQUIRE(connection_->start([] {}).ok());

    from_server_ = new uv_pipe_t;
    REQUIRE(uv_pipe_init(&w.loop, from_server_, 0) == 0);
    REQUIRE(uv_pipe_open(from_server_, server_out[0]) == 0);
    from_server_->data = this;
    REQUIRE(uv_read_start(reinterpret_cast<uv_stream_t*>(from_server_), on_alloc, on_read) == 0);
  }
  Editor(const Editor&) = delete;
  Editor& operator=(const Editor&) = delete;

  // Closes both pipes and the connection and lets their close callbacks run (the world's loop
  // outlives this test). No REQUIRE here: a destructor must not throw.
  ~Editor() {
    ::close(to_server_);
    int pending = 2;
    from_server_->data = &pending;
    uv_close(reinterpret_cast<uv_handle_t*>(from_server_), [](uv_handle_t* handle) {
      --*static_cast<int*>(handle->data);
      delete reinterpret_cast<uv_pipe_t*>(handle);
    });
    connection_->close([&pending] { --pending; });
    auto deadline = std::chrono::steady_clock::now() + 30s;
    while (pending > 0 && std::chrono::steady_clock::now() < deadline) uv_run(&w_.loop, UV_RUN_ONCE);
    CHECK(pending == 0);
  }

  // The whole reply to `method`.
  json ask(const std::string& method, const json& params) {
    int id = next_id_++;
    std::string bytes = framing_.encode(json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump());
    for (std::size_t done = 0; done < bytes.size();) {
      ssize_t n = ::write(to_server_, bytes.data() + done, bytes.size() - done);
      REQUIRE(n > 0);
      done += static_cast<std::size_t>(n);
    }
    w_.run_until([&] { return replies_.count(id) != 0; });
    return replies_[id];
  }
  // The result of a request that must succeed.
  json result(const std::string& method, const json& params) {
    json reply = ask(method, params);
    INFO(method << " " << params.dump() << " -> " << reply.dump());
    REQUIRE(reply.contains("result"));
    return reply["result"];
  }
  // The error of a request that must fail.
  json error(const std::string& method, const json& params) {
    json reply = ask(method, params);
    INFO(method << " " << params.dump() << " -> " << reply.dump());
    REQUIRE(reply.contains("error"));
    return reply["error"];
  }

 private:
  static void on_alloc(uv_handle_t* handle, std::size_t, uv_buf_t* buf) {
    auto* self = static_cast<Editor*>(handle->data);
    *buf = uv_buf_init(self->buffer_.data(), static_cast<unsigned>(self->buffer_.size()));
  }
  // CHECK, never REQUIRE: this runs inside a libuv callback, which nothing may throw across.
  static void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
    auto* self = static_cast<Editor*>(stream->data);
    if (nread <= 0) return;
    std::vector<rpc::FrameEvent> events;
    self->framing_.feed(std::string_view(buf->base, static_cast<std::size_t>(nread)), events);
    for (const auto& event : events) {
      CHECK(event.kind == rpc::FrameEvent::Kind::kMessage);
      // Strict parsing: a reply that is not valid UTF-8 JSON fails here.
      json message = json::parse(event.text, nullptr, false);
      CHECK_FALSE(message.is_discarded());
      if (message.is_object() && message.contains("id") && !message.contains("method")) self->replies_[message["id"].get<int>()] = message;
    }
  }

  World& w_;
  int to_server_ = -1;
  uv_pipe_t* from_server_ = nullptr;
  std::unique_ptr<rpc::Connection> connection_;
  std::unique_ptr<api::SandboxMethods> methods_;
  rpc::ContentLengthFraming framing_;
  std::vector<char> buffer_ = std::vector<char>(1u << 16);
  std::map<int, json> replies_;
  int next_id_ = 1;
};

std::string numbered_lines(int count, const std::map<int, std::string>& replaced = {}) {
  std::string out;
  for (int i = 1; i <= count; ++i) out += (replaced.count(i) ? replaced.at(i) : "line " + std::to_string(i)) + "\n";
  return out;
}

std::string all_bytes() {
  std::string out;
  for (int i = 0; i < 256; ++i) out.push_back(static_cast<char>(i));
  return out;
}

const std::string kBigBase = numbered_lines(40);
const std::string kAgentBinary("\xff\xfe" "bin\0ary\n", 10);  // what the guest's printf below writes

// A host git repository: text, binary and Latin-1 files, an executable, a committed file the user
// has edited since, secrets, and a FIFO the snapshot must skip.
struct HostRepo {
  TempDir dir{"lockroom-editor"};
  HostRepo() {
    dir.write("big.txt", kBigBase);
    dir.write("data.bin", all_bytes());
    dir.write("latin1.txt", "caf\xe9\n");
    dir.write("gone.txt", "to be deleted\n");
    dir.write("tool.sh", "#!/bin/sh\necho tool\n");
    chmod((dir / "tool.sh").c_str(), 0755);
    dir.write("notes.txt", "keep me\n");
    dir.write("config/app.yaml", "name: demo\n");
    git("init -q -b main && git -c user.name=t -c user.email=t@t add -A && git -c user.name=t -c user.email=t@t commit -q -m initial");
    dir.write("notes.txt", "keep me\nuncommitted edit\n");
    dir.write(".env", "API_KEY=do-not-copy\n");
    dir.write(".env.example", "API_KEY=\n");
    dir.write("config/app.secret", "token\n");
    REQUIRE(mkfifo((dir / "pipe").c_str(), 0644) == 0);
  }
  std::string git(const std::string& args) const { return sh("cd " + dir.path().string() + " && git " + args); }
  std::string read(const std::string& relative) const { return read_file(dir / relative); }
  // Every regular file and symlink outside .git, with mode and content: proves what changed.
  std::string worktree_fingerprint() const {
    return sh("cd " + dir.path().string() + " && find . -path ./.git -prune -o \\( -type f -o -type l \\) -print | LC_ALL=C sort | "
              "while read f; do stat -c '%n %a %s' \"$f\"; sha1sum < \"$f\"; done");
  }
};

// A sandbox created through the editor's sandbox/create; destroyed with the test.
struct EditorSandbox {
  World& w;
  json created;
  std::string id;
  EditorSandbox(World& world, Editor& editor, const json& workspace) : w(world) {
    created = editor.result("sandbox/create", {{"workspace", workspace}});
    id = created.at("sandboxId").get<std::string>();
  }
  ~EditorSandbox() { w.destroy(id); }
  // A method's params for this sandbox: {"sandboxId": id} and `extra`.
  json params(json extra = json::object()) const {
    json p{{"sandboxId", id}};
    p.update(extra);
    return p;
  }
  // Runs a shell command in the guest's /workspace; returns its output, requires exit 0.
  std::string guest(const std::string& script) {
    std::string p = w.start(id, {"sh", "-c", "cd /workspace && " + script + " 2>&1"});
    auto exit = w.wait_exit(p);
    INFO(script << " printed: " << w.events.output[p]);
    REQUIRE(exit.exit_code == 0);
    return w.events.output[p];
  }
};

// Decodes a field that is text, or base64 when `<key>Encoding` says so.
std::string bytes_of(const json& object, const std::string& key) {
  std::string value = object.at(key).get<std::string>();
  if (object.value(key + "Encoding", "") != "base64") return value;
  auto decoded = protocol::channel::base64_decode(value);
  REQUIRE(decoded);
  return *decoded;
}

const json* find_file(const json& files, const std::string& path) {
  for (const auto& f : files)
    if (f.at("path") == path) return &f;
  return nullptr;
}

std::set<std::string> paths_of(const json& files) {
  std::set<std::string> out;
  for (const auto& f : files) out.insert(f.at("path").get<std::string>());
  return out;
}

std::set<std::string> strings_of(const json& list) {
  std::set<std::string> out;
  for (const auto& s : list) out.insert(s.get<std::string>());
  return out;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

void check_failed(const json& error, const char* kind, const std::string& mentions) {
  INFO(error.dump());
  CHECK(error.at("code") == kRequestFailed);
  CHECK(error.at("data").at("kind") == kind);
  CHECK(has(error.at("message").get<std::string>(), mentions));
}

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

  // --- changes/apply of one hunk: only that hunk lands in the host file.
  json one_hunk = editor.result("changes/apply", with({{"select", {{{"path", "big.txt"}, {"hunks", {first_id}}}}}}));
  CHECK(one_hunk == json{{"mode", "worktree"}, {"files", {{{"path", "big.txt"}, {"status", "applied"}}}}, {"counts", {{"applied", 1}}}});
  CHECK(repo.read("big.txt") == numbered_lines(40, {{3, "line 3 from the agent"}}));
  CHECK(repo.read("data.bin") == all_bytes());  // nothing else moved
  CHECK(fs::exists(repo.dir / "gone.txt"));
  CHECK_FALSE(fs::exists(repo.dir / "added.txt"));

  // A stale hunk id and a path with no change are refused by name; the host is not touched.
  std::string after_hunk = repo.worktree_fingerprint();
  json refused = editor.result("changes/apply", with({{"select", {{{"path", "big.txt"}, {"hunks", {"0123456789abcdef"}}}, {{"path", "nope.txt"}}}}}));
  INFO(refused.dump());
  CHECK(refused.at("counts") == json{{"refused", 2}});
  CHECK(has(find_file(refused.at("files"), "big.txt")->at("reason").get<std::string>(), "is not a hunk of big.txt"));
  CHECK(has(find_file(refused.at("files"), "nope.txt")->at("reason").get<std::string>(), "not among the changed files"));
  CHECK(repo.worktree_fingerprint() == after_hunk);

  // Everything else: big.txt is merged over the hunk already applied, the rest written as is.
  json rest = editor.result("changes/apply", with({{"mode", "worktree"}}));
  INFO(rest.dump());
  CHECK(find_file(rest.at("files"), "big.txt")->at("status") == "merged");
  CHECK(rest.at("counts") == json{{"applied", 6}, {"merged", 1}});
  CHECK(repo.read("big.txt") == big_text.at("data").get<std::string>());
  CHECK(repo.read("data.bin") == kAgentBinary);
  CHECK(repo.read("latin1.txt") == "caf\xe9\ncaf\xe9 au lait\n");
  CHECK(repo.read("added.txt") == "new\n");
  CHECK(repo.read("later.txt") == "later\n");
  CHECK_FALSE(fs::exists(repo.dir / "gone.txt"));
  CHECK((fs::status(repo.dir / "tool.sh").permissions() & fs::perms::owner_exec) == fs::perms::none);
  CHECK_FALSE(fs::exists(repo.dir / "bad\xffname.txt"));  // refused by the review, never written
  CHECK(repo.read("notes.txt") == "keep me\nuncommitted edit\n");

  // --- changes/discard of one path, then of everything, in the guest only.
  std::string applied_host = repo.worktree_fingerprint();
  CHECK(editor.result("changes/discard", with({{"paths", {"data.bin"}}})) == json{{"discarded", 1}});
  CHECK(s.guest("git status --porcelain -- data.bin") == "");
  json after_one = editor.result("changes/list", id);
  CHECK(paths_of(after_one.at("files")) == std::set<std::string>{"big.txt", "latin1.txt", "gone.txt", "tool.sh", "added.txt", "later.txt"});
  CHECK(editor.result("changes/discard", id) == json{{"discarded", 6}});
  CHECK(s.guest("git status --porcelain --untracked-files=all") == "");
  json empty = editor.result("changes/list", id);
  CHECK(empty.at("files").empty());
  CHECK(empty.at("refused").empty());
  CHECK(repo.worktree_fingerprint() == applied_host);  // discarding never touches the host
}

TEST_CASE("editor: branch mode commits without touching the checkout; workspace/sync brings host edits in", "[sandbox][workspace][editor]") {
  World& w = world();
  Editor editor(w);
  HostRepo repo;
  EditorSandbox s(w, editor, repo.dir.path().string());
  const json id = s.params();
  auto with = [&](json extra) { return s.params(std::move(extra)); };
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

  // --- branch mode, default name: the sandbox id, on the user's HEAD, without their uncommitted edit.
  json saved = editor.result("changes/apply", with({{"mode", "branch"}}));
  INFO(saved.dump());
  std::string ref = "refs/heads/lockroom/" + s.id;
  CHECK(saved.at("created") == true);
  CHECK(saved.at("branch") == ref);
  CHECK(saved.at("conflicts").empty());
  CHECK(saved.at("refused").empty());
  CHECK(repo.git("rev-parse " + ref) == saved.at("commit").get<std::string>() + "\n");
  CHECK(repo.git("rev-parse " + ref + "^") == head);
  CHECK(repo.git("show " + ref + ":agent.txt") == "agent\n");
  CHECK(repo.git("show " + ref + ":big.txt") == agent_big);
  CHECK(repo.git("show " + ref + ":notes.txt") == "keep me\n");  // HEAD's, not the uncommitted edit
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
