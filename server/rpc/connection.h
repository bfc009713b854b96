// Connection: one editor talking JSON-RPC to lockroom over stdio.
//
// Glues StdioTransport (bytes) → Framing (message texts) → Dispatcher (handlers) on one libuv
// loop, and offers the editor-facing helpers every feature uses: notifications, calls to the
// client, window/logMessage. Either framing can be chosen: Content-Length for the editor face,
// ndjson for the ACP face. With `input_mirror`, every byte read from the editor is also written,
// as read, to that file (clangd's --input-mirror-file): a client's bug can then be replayed as
// a transcript test (tests/transcripts/README.md). The mirror is written synchronously on the
// loop thread and flushed per read; it is a debugging aid, not for production use.
// Loop thread only.
#pragma once

#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include <uv.h>

#include "server/common/result.h"
#include "server/rpc/dispatcher.h"
#include "server/rpc/framing.h"
#include "server/rpc/stdio_transport.h"
#include "server/rpc/uv_scheduler.h"

namespace lockroom::rpc {

struct ConnectionOptions {
  FramingKind framing = FramingKind::kContentLength;
  std::size_t max_message_bytes = kDefaultMaxMessageBytes;
  int in_fd = 0;
  int out_fd = 1;
  std::string input_mirror;  // a file to copy the raw input to; empty: none
};

// LSP's MessageType for window/logMessage.
enum class MessageType { kError = 1, kWarning = 2, kInfo = 3, kLog = 4 };

class Connection {
 public:
  Connection(uv_loop_t* loop, ConnectionOptions options);
  ~Connection();

  Dispatcher& dispatcher() { return dispatcher_; }
  Scheduler& scheduler() { return scheduler_; }
  uv_loop_t* loop() const { return loop_; }

  // Starts reading. `on_gone` runs once when the editor goes away (end of input or a broken pipe).
  Result<void> start(std::function<void()> on_gone);
  // Stops reading, fails calls still waiting for the client, flushes what is queued, closes the
  // handles; `done` runs when all of it is finished.
  void close(std::function<void()> done);

  void notify(std::string_view method, const json& params) { dispatcher_.notify(method, params); }
  void log_message(MessageType type, const std::string& message);
  // Flow control: bytes written but not yet taken by the editor, and a callback after each write
  // to it completes (the queue shrank).
  std::size_t queued_bytes() const { return transport_.queued_bytes(); }
  void on_written(std::function<void()> fn) { transport_.on_written(std::move(fn)); }
  // Bytes outside any message, after what is queued (a shared server's end-of-session record to
  // its bridge, server/serve/hello.h).
  void write_raw(std::string_view bytes) { transport_.write(bytes); }

 private:
  void on_bytes(std::string_view bytes);
  void editor_gone(const std::string& why);

  uv_loop_t* loop_;
  ConnectionOptions options_;
  UvScheduler scheduler_;
  StdioTransport transport_;
  std::unique_ptr<Framing> framing_;
  Dispatcher dispatcher_;
  std::vector<FrameEvent> events_;
  std::function<void()> on_gone_;
  bool gone_ = false;
  std::FILE* mirror_ = nullptr;
};

}  // namespace lockroom::rpc
