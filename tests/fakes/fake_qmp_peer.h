// FakeQmpPeer: a scripted stand-in for QEMU's QMP socket, on the test's libuv loop.
//
// Listens on a unix socket, greets the first client (or misbehaves, as told), and answers each
// command from a script: a return value, an error, silence (to test timeouts), closing the
// connection, or a line that is not JSON. Unscripted commands get `{"return": {}}`. Records the
// commands it saw. Header-only; loop thread only. Like Kata's govmm qmp_test.go fakes.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <uv.h>

#include "server/common/uv_handle.h"

namespace lockroom::testing {

class FakeQmpPeer {
 public:
  enum class Kind { kReturn, kError, kSilent, kClose, kGarbage };
  struct Action {
    Kind kind = Kind::kReturn;
    nlohmann::json value = nlohmann::json::object();  // the return value, or {"class","desc"}
  };
  enum class Greeting { kNormal, kNone, kNotJson, kWrongFirst };

  FakeQmpPeer(uv_loop_t* loop, std::string path) : loop_(loop), path_(std::move(path)) {}
  ~FakeQmpPeer() { close(); }

  void script(const std::string& command, Action action) { script_[command] = std::move(action); }
  void set_greeting(Greeting g) { greeting_ = g; }

  bool listen() {
    server_ = new_handle<uv_pipe_t>(this);
    uv_pipe_init(loop_, server_, 0);
    if (uv_pipe_bind(server_, path_.c_str()) != 0) return false;
    return uv_listen(reinterpret_cast<uv_stream_t*>(server_), 1, [](uv_stream_t* s, int status) {
             auto* self = static_cast<FakeQmpPeer*>(s->data);
             if (self && status == 0) self->accept();
           }) == 0;
  }

  void emit_event(const std::string& name, nlohmann::json data = nlohmann::json::object()) {
    write_line(nlohmann::json{{"event", name}, {"data", data}, {"timestamp", {{"seconds", 0}, {"microseconds", 0}}}}.dump());
  }
  void drop_client() { close_handle(client_); }
  void close() {
    close_handle(client_);
    close_handle(server_);
  }
  const std::vector<std::string>& commands() const { return commands_; }

 private:
  void accept() {
    client_ = new_handle<uv_pipe_t>(this);
    uv_pipe_init(loop_, client_, 0);
    uv_accept(reinterpret_cast<uv_stream_t*>(server_), reinterpret_cast<uv_stream_t*>(client_));
    switch (greeting_) {
      case Greeting::kNormal: write_line(R"({"QMP": {"version": {"qemu": {"major": 7, "minor": 2, "micro": 0}}, "capabilities": []}})"); break;
      case Greeting::kNotJson: write_line("this is not json"); break;
      case Greeting::kWrongFirst: write_line(R"({"return": {}})"); break;
      case Greeting::kNone: break;
    }
    uv_read_start(reinterpret_cast<uv_stream_t*>(client_),
                  [](uv_handle_t*, std::size_t, uv_buf_t* b) { b->base = new char[4096]; b->len = 4096; },
                  [](uv_stream_t* s, ssize_t n, const uv_buf_t* b) {
                    std::unique_ptr<char[]> owned(b->base);
                    auto* self = static_cast<FakeQmpPeer*>(s->data);
                    if (!self) return;
                    if (n < 0) return self->drop_client();
                    self->inbuf_.append(b->base, static_cast<std::size_t>(n));
                    std::size_t nl;
                    while (self->client_ && (nl = self->inbuf_.find('\n')) != std::string::npos) {
                      std::string line = self->inbuf_.substr(0, nl);
                      self->inbuf_.erase(0, nl + 1);
                      self->on_command(nlohmann::json::parse(line, nullptr, false));
                    }
                  });
  }

  void on_command(const nlohmann::json& msg) {
    if (!msg.is_object() || !msg.contains("execute")) return;
    std::string cmd = msg["execute"];
    commands_.push_back(cmd);
    Action a;
    if (auto it = script_.find(cmd); it != script_.end()) a = it->second;
    nlohmann::json id = msg.value("id", nlohmann::json());
    switch (a.kind) {
      case Kind::kReturn: write_line(nlohmann::json{{"return", a.value}, {"id", id}}.dump()); break;
      case Kind::kError: write_line(nlohmann::json{{"error", a.value}, {"id", id}}.dump()); break;
      case Kind::kSilent: break;
      case Kind::kClose: drop_client(); break;
      case Kind::kGarbage: write_line("{\"return\": oops"); break;
    }
  }

  void write_line(const std::string& line) {
    if (!client_) return;
    struct Req {
      uv_write_t req;
      std::string data;
    };
    auto* r = new Req{};
    r->data = line + "\r\n";
    uv_buf_t buf = uv_buf_init(r->data.data(), static_cast<unsigned>(r->data.size()));
    if (uv_write(&r->req, reinterpret_cast<uv_stream_t*>(client_), &buf, 1, [](uv_write_t* w, int) { delete reinterpret_cast<Req*>(w); }) != 0)
      delete r;
  }

  uv_loop_t* loop_;
  std::string path_;
  uv_pipe_t* server_ = nullptr;
  uv_pipe_t* client_ = nullptr;
  std::string inbuf_;
  Greeting greeting_ = Greeting::kNormal;
  std::map<std::string, Action> script_;
  std::vector<std::string> commands_;
};

}  // namespace lockroom::testing
