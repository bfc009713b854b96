// The scripted editor of the approval tests; see editor_stub.h.
#include "tests/integration/editor_stub.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "server/api/network_methods.h"

namespace lockroom::testing {

using protocol::json;

EditorPipes open_editor_pipes(uv_loop_t* loop, void* owner, uv_alloc_cb on_alloc, uv_read_cb on_read) {
  int server_in[2], server_out[2];
  REQUIRE(pipe2(server_in, O_CLOEXEC) == 0);
  REQUIRE(pipe2(server_out, O_CLOEXEC) == 0);
  EditorPipes pipes;
  pipes.to_server = server_in[1];
  rpc::ConnectionOptions options;
  options.in_fd = server_in[0];
  options.out_fd = server_out[1];
  pipes.connection = std::make_unique<rpc::Connection>(loop, options);
  pipes.from_server = new uv_pipe_t;
  REQUIRE(uv_pipe_init(loop, pipes.from_server, 0) == 0);
  REQUIRE(uv_pipe_open(pipes.from_server, server_out[0]) == 0);
  pipes.from_server->data = owner;
  REQUIRE(uv_read_start(reinterpret_cast<uv_stream_t*>(pipes.from_server), on_alloc, on_read) == 0);
  return pipes;
}

EditorStub::EditorStub(uv_loop_t* loop) {
  EditorPipes pipes = open_editor_pipes(loop, this, on_alloc, on_read);
  to_server_ = pipes.to_server;
  from_server_ = pipes.from_server;
  connection_ = std::move(pipes.connection);
  REQUIRE(connection_->start([] { FAIL_CHECK("the server's editor connection ended"); }).ok());
}

void EditorStub::close(std::function<void()> done) {
  ::close(to_server_);
  to_server_ = -1;
  auto pending = std::make_shared<int>(2);
  auto one_closed = [pending, done] {
    if (--*pending == 0) done();
  };
  from_server_->data = new std::function<void()>(one_closed);
  uv_close(reinterpret_cast<uv_handle_t*>(from_server_), [](uv_handle_t* handle) {
    auto* then = static_cast<std::function<void()>*>(handle->data);
    delete reinterpret_cast<uv_pipe_t*>(handle);
    (*then)();
    delete then;
  });
  from_server_ = nullptr;
  connection_->close(one_closed);
}

void EditorStub::ask(const std::string& sandbox_id, const egress::ApprovalQuestion& question, egress::ApprovalReply reply) {
  api::ask_editor_to_approve(*connection_, declared, sandbox_id, question, std::move(reply), timeout);
}

void EditorStub::on_alloc(uv_handle_t* handle, std::size_t, uv_buf_t* buf) {
  auto* self = static_cast<EditorStub*>(handle->data);
  *buf = uv_buf_init(self->buffer_.data(), static_cast<unsigned>(self->buffer_.size()));
}

void EditorStub::on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
  auto* self = static_cast<EditorStub*>(stream->data);
  if (nread <= 0) return;  // the server's side stays open for the whole run
  std::vector<rpc::FrameEvent> events;
  self->framing_.feed(std::string_view(buf->base, static_cast<std::size_t>(nread)), events);
  for (const auto& event : events) {
    CHECK(event.kind == rpc::FrameEvent::Kind::kMessage);
    self->on_message(event.text);
  }
}

void EditorStub::on_message(const std::string& text) {
  // CHECK, never REQUIRE: this runs inside a libuv callback, which nothing may throw across.
  json message = json::parse(text, nullptr, false);
  CHECK(message.is_object());
  if (!message.is_object()) return;
  std::string method = message.value("method", "");
  if (method == "$/cancelRequest") cancelled.push_back(message["params"]["id"]);
  if (method != "network/approve") return;
  asked.push_back(message["params"]);
  if (script.empty()) FAIL_CHECK("network/approve arrived with no scripted answer: " << text);
  std::string decision = script.empty() ? "deny" : script.front();
  if (!script.empty()) script.pop_front();
  if (decision == "silent") return;
  json answer{{"jsonrpc", "2.0"}, {"id", message["id"]}, {"result", {{"decision", decision}}}};
  if (!decision.empty() && decision.front() == '{') answer["result"] = json::parse(decision);  // a whole result, e.g. with a scope
  if (decision == "error")
    answer = json{{"jsonrpc", "2.0"}, {"id", message["id"]}, {"error", {{"code", -32603}, {"message", "the approval dialog failed"}}}};
  std::string bytes = framing_.encode(answer.dump());
  if (answer_after.count() <= 0) {
    CHECK(write(to_server_, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
    return;
  }
  // Answer later (a user who takes a while): a one-shot timer, freed in its close callback.
  struct Later {
    EditorStub* self;
    std::string bytes;
  };
  auto* timer = new uv_timer_t;
  uv_timer_init(from_server_->loop, timer);
  timer->data = new Later{this, std::move(bytes)};
  uv_timer_start(timer, [](uv_timer_t* t) {
    std::unique_ptr<Later> later(static_cast<Later*>(t->data));
    uv_close(reinterpret_cast<uv_handle_t*>(t), [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
    if (later->self->to_server_ < 0) return;  // closed meanwhile
    CHECK(write(later->self->to_server_, later->bytes.data(), later->bytes.size()) == static_cast<ssize_t>(later->bytes.size()));
  }, static_cast<std::uint64_t>(answer_after.count()), 0);
}

}  // namespace lockroom::testing
