// The editor harness of the workspace method tests (test_sandbox_workspace_methods.cpp,
// test_sandbox_workspace_branch.cpp): an Editor that talks Content-Length JSON-RPC over pipes to
// the server's real rpc::Connection, with sandbox/*, process/*, changes/*, workspace/sync and network/policy bound
// to the world's manager as `lockroom serve` binds them, and that gets the manager's
// sandbox/misbehaved as the editor of `lockroom serve` would; a host repository to snapshot
// (HostRepo); a sandbox made with the editor's sandbox/create (EditorSandbox); and small helpers
// for reading the answers.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "protocol/channel/base64.h"
#include "server/api/file_methods.h"
#include "server/api/network_methods.h"
#include "server/api/sandbox_methods.h"
#include "server/api/workspace_methods.h"
#include "server/rpc/connection.h"
#include "server/rpc/framing.h"
#include "tests/integration/sandbox_world.h"
#include "tests/support/shell.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wire_schema_check.h"

namespace lockroom::testing {

inline constexpr int kRequestFailed = -32803;
inline constexpr int kInvalidParams = -32602;

// The editor's end of a real editor connection: lockroom's rpc::Connection (Content-Length
// framing) over two pipes, with sandbox/*, process/*, changes/* and workspace/sync bound to the
// world's manager. ask() writes one request and turns the loop until its reply arrives. While it
// lives, the world's recorder passes guest_misbehaved on to its SandboxMethods, so the server
// sends sandbox/misbehaved here; every notification received is kept in `notifications`.
class Editor {
 public:
  using json = protocol::json;

  explicit Editor(World& w) : w_(w) {
    EditorPipes pipes = open_editor_pipes(&w.loop, this, on_alloc, on_read);
    to_server_ = pipes.to_server;
    from_server_ = pipes.from_server;
    connection_ = std::move(pipes.connection);
    methods_ = std::make_unique<api::SandboxMethods>(*connection_);
    methods_->bind(*w.manager, w.watch);
    api::bind_workspace_methods(*connection_, *w.manager);
    api::bind_network_methods(*connection_, *w.manager);
    api::bind_file_methods(connection_->dispatcher(), *w.manager);
    REQUIRE(connection_->start([] {}).ok());
    w.events.editor_events = methods_.get();
  }
  Editor(const Editor&) = delete;
  Editor& operator=(const Editor&) = delete;

  // Closes both pipes and the connection and lets their close callbacks run (the world's loop
  // outlives this test). No REQUIRE here: a destructor must not throw.
  ~Editor() {
    if (w_.events.editor_events == methods_.get()) w_.events.editor_events = nullptr;
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
  json ask(const std::string& method, const json& params) { return wait(send(method, params)); }
  // Writes a request without waiting for its reply; returns its id (for wait() and cancel()).
  int send(const std::string& method, const json& params) {
    int id = next_id_++;
    methods_by_id_[id] = method;
    write(json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}});
    return id;
  }
  // Writes a notification (no reply).
  void notify(const std::string& method, const json& params) { write(json{{"jsonrpc", "2.0"}, {"method", method}, {"params", params}}); }
  // $/cancelRequest for the request `id`.
  void cancel(int id) { notify("$/cancelRequest", {{"id", id}}); }
  // Turns the loop until the reply to `id` arrives; returns it.
  json wait(int id) {
    w_.run_until([&] { return replies_.count(id) != 0; });
    return replies_[id];
  }
  // Whether the reply to `id` has arrived (the loop is not turned).
  bool answered(int id) const { return replies_.count(id) != 0; }
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

  // A slow editor: stops (or starts again) reading what the server sends.
  void pause_reading(bool paused) {
    auto* stream = reinterpret_cast<uv_stream_t*>(from_server_);
    if (paused) uv_read_stop(stream);
    else uv_read_start(stream, on_alloc, on_read);
  }
  // What the server has queued for this editor and not yet written (flow control).
  std::size_t server_queued_bytes() const { return connection_->queued_bytes(); }

  // Every message the server sent, in order (replies and notifications together).
  std::vector<json> messages;
  // The id the next ask() uses.
  int next_id() const { return next_id_; }
  // Every notification the server sent (a message with "method" and no "id"), in order.
  std::vector<json> notifications;
  // The params of those named `method`, in order.
  std::vector<json> notified(const std::string& method) const {
    std::vector<json> out;
    for (const auto& n : notifications)
      if (n.at("method") == method) out.push_back(n.value("params", json()));
    return out;
  }

 private:
  void write(const json& message) {
    std::string bytes = framing_.encode(message.dump());
    for (std::size_t done = 0; done < bytes.size();) {
      ssize_t n = ::write(to_server_, bytes.data() + done, bytes.size() - done);
      REQUIRE(n > 0);
      done += static_cast<std::size_t>(n);
    }
  }
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
      // Strict parsing: a message that is not valid UTF-8 JSON fails here.
      json message = json::parse(event.text, nullptr, false);
      CHECK_FALSE(message.is_discarded());
      if (!message.is_object()) continue;
      self->messages.push_back(message);
      // Everything the server sends matches protocol/schema (CHECK: a libuv callback).
      std::string answered;
      if (message.contains("id") && !message.contains("method") && message["id"].is_number_integer())
        answered = self->methods_by_id_[message["id"].get<int>()];
      auto problems = WireSchemaCheck::instance().check(message, answered);
      for (const auto& problem : problems) FAIL_CHECK("the server sent what protocol/schema does not allow: " << problem << "\n  " << message.dump());
      if (message.contains("id") && !message.contains("method")) self->replies_[message["id"].get<int>()] = message;
      if (message.contains("method") && !message.contains("id")) self->notifications.push_back(message);
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
  std::map<int, std::string> methods_by_id_;
  int next_id_ = 1;
};

// "line 1\n" ... "line <count>\n", with the lines of `replaced` (by number) replaced.
inline std::string numbered_lines(int count, const std::map<int, std::string>& replaced = {}) {
  std::string out;
  for (int i = 1; i <= count; ++i) out += (replaced.count(i) ? replaced.at(i) : "line " + std::to_string(i)) + "\n";
  return out;
}

// The 256 byte values in order.
inline std::string all_bytes() {
  std::string out;
  for (int i = 0; i < 256; ++i) out.push_back(static_cast<char>(i));
  return out;
}

inline const std::string kBigBase = numbered_lines(40);  // HostRepo's big.txt

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
  protocol::json created;
  std::string id;
  EditorSandbox(World& world, Editor& editor, const protocol::json& workspace) : w(world) {
    created = editor.result("sandbox/create", {{"workspace", workspace}});
    id = created.at("sandboxId").get<std::string>();
  }
  ~EditorSandbox() { w.destroy(id); }
  // A method's params for this sandbox: {"sandboxId": id} and `extra`.
  protocol::json params(protocol::json extra = protocol::json::object()) const {
    protocol::json p{{"sandboxId", id}};
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
inline std::string bytes_of(const protocol::json& object, const std::string& key) {
  std::string value = object.at(key).get<std::string>();
  if (object.value(key + "Encoding", "") != "base64") return value;
  auto decoded = protocol::channel::base64_decode(value);
  REQUIRE(decoded);
  return *decoded;
}

// The entry of `files` (an answer's "files") with this path, or null.
inline const protocol::json* find_file(const protocol::json& files, const std::string& path) {
  for (const auto& f : files)
    if (f.at("path") == path) return &f;
  return nullptr;
}

inline std::set<std::string> paths_of(const protocol::json& files) {
  std::set<std::string> out;
  for (const auto& f : files) out.insert(f.at("path").get<std::string>());
  return out;
}

inline std::set<std::string> strings_of(const protocol::json& list) {
  std::set<std::string> out;
  for (const auto& s : list) out.insert(s.get<std::string>());
  return out;
}

inline bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A -32803 error of this kind whose message names `mentions`.
inline void check_failed(const protocol::json& error, const char* kind, const std::string& mentions) {
  INFO(error.dump());
  CHECK(error.at("code") == kRequestFailed);
  CHECK(error.at("data").at("kind") == kind);
  CHECK(has(error.at("message").get<std::string>(), mentions));
}

}  // namespace lockroom::testing
