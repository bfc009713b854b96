// A scripted editor for the sandbox integration tests' approvals: the server's real editor
// connection (rpc::Connection, Content-Length framing) over two pipes, asked through the same
// api::ask_editor_to_approve() the editor face uses, and a test-side reader on the loop that
// answers each network/approve request with the next scripted decision.
//
// `declared` is what the client said at initialize (false: nothing is sent and the outcome is
// "not asked"); each script entry is a decision sent back as the request's result ("allowOnce",
// "allowSandbox", "allowHost", "deny", or anything else for an unknown decision; a JSON object
// is sent as the whole result, e.g. with a scope), "error" (a JSON-RPC error answer) or "silent"
// (no answer: the server's call times out after `timeout`). With `answer_after` above 0 each
// answer is sent that long after the question (a user who takes a while).
// Every request the server sent is kept in `asked` (its params), every $/cancelRequest in
// `cancelled`. Loop thread only; the World makes one on demand and the test closes it.
// open_editor_pipes() is that connection's setup, shared with the workspace tests' Editor
// (editor_session.h).
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <uv.h>

#include "server/egress/engine/proxy.h"
#include "server/rpc/connection.h"
#include "server/rpc/framing.h"

namespace lockroom::testing {

// The server's editor connection over two pipes, as `lockroom serve` has it over stdio, and the
// editor's ends: `to_server` takes requests; `from_server` reads the server's output on `loop`
// (on_alloc/on_read, its `data` set to `owner`), already started. The connection is not: bind
// methods to it, then start it.
struct EditorPipes {
  int to_server = -1;
  uv_pipe_t* from_server = nullptr;
  std::unique_ptr<rpc::Connection> connection;
};
EditorPipes open_editor_pipes(uv_loop_t* loop, void* owner, uv_alloc_cb on_alloc, uv_read_cb on_read);

class EditorStub {
 public:
  explicit EditorStub(uv_loop_t* loop);
  EditorStub(const EditorStub&) = delete;
  EditorStub& operator=(const EditorStub&) = delete;

  // Closes the connection and the pipes (their handles are freed in their close callbacks); `done`
  // runs on the loop when all of it is closed. Nothing may be asked afterwards.
  void close(std::function<void()> done);

  // SandboxEvents::approve_network goes here.
  void ask(const std::string& sandbox_id, const egress::ApprovalQuestion& question, egress::ApprovalReply reply);

  bool declared = true;
  std::deque<std::string> script;
  std::chrono::milliseconds timeout{1500};
  std::chrono::milliseconds answer_after{0};
  std::vector<protocol::json> asked;      // params of every network/approve the server sent
  std::vector<protocol::json> cancelled;  // ids the server withdrew ($/cancelRequest, on its timeout)

 private:
  static void on_alloc(uv_handle_t* handle, std::size_t suggested, uv_buf_t* buf);
  static void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf);
  void on_message(const std::string& text);

  int to_server_ = -1;  // the editor's side of the server's input
  uv_pipe_t* from_server_ = nullptr;
  std::unique_ptr<rpc::Connection> connection_;
  rpc::ContentLengthFraming framing_;
  std::vector<char> buffer_ = std::vector<char>(1u << 16);
};

}  // namespace lockroom::testing
