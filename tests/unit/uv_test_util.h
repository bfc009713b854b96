// A real libuv loop for tests, and a pipe end the test reads on that same loop.
//
// TestLoop runs until nothing is left to do; a watchdog timer (unreferenced, so it never keeps
// the loop alive by itself) stops a run that takes too long, so a broken test fails instead of
// hanging. finish() closes the watchdog and returns uv_loop_close(), which is 0 only when every
// handle and request the test and the code under test opened has been closed.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <functional>
#include <string>

#include <uv.h>

namespace lockroom::testing {

class TestLoop {
 public:
  explicit TestLoop(std::uint64_t watchdog_ms = 20000) {
    uv_loop_init(&loop_);
    uv_timer_init(&loop_, &watchdog_);
    watchdog_.data = this;
    uv_timer_start(
        &watchdog_,
        [](uv_timer_t* t) {
          auto* self = static_cast<TestLoop*>(t->data);
          self->timed_out_ = true;
          uv_stop(&self->loop_);
        },
        watchdog_ms, 0);
    uv_unref(reinterpret_cast<uv_handle_t*>(&watchdog_));
  }
  TestLoop(const TestLoop&) = delete;
  TestLoop& operator=(const TestLoop&) = delete;

  uv_loop_t* get() { return &loop_; }
  // Runs until no referenced handle or request is left (or the watchdog fires).
  void run() { uv_run(&loop_, UV_RUN_DEFAULT); }
  void run_once() { uv_run(&loop_, UV_RUN_NOWAIT); }
  bool timed_out() const { return timed_out_; }

  // Closes the watchdog, lets every close callback run, and closes the loop.
  int finish() {
    if (!uv_is_closing(reinterpret_cast<uv_handle_t*>(&watchdog_))) uv_close(reinterpret_cast<uv_handle_t*>(&watchdog_), nullptr);
    uv_run(&loop_, UV_RUN_DEFAULT);
    int rc = uv_loop_close(&loop_);
    closed_ = rc == 0;
    return rc;
  }

  ~TestLoop() {
    if (closed_) return;
    // A failed test: close what is left so the next test starts clean.
    uv_walk(
        &loop_, [](uv_handle_t* h, void*) { if (!uv_is_closing(h)) uv_close(h, nullptr); }, nullptr);
    uv_run(&loop_, UV_RUN_DEFAULT);
    uv_loop_close(&loop_);
  }

 private:
  uv_loop_t loop_;
  uv_timer_t watchdog_;
  bool timed_out_ = false;
  bool closed_ = false;
};

// Reads one end of a pipe or socket on the loop, collecting everything until end of input.
class PipeReader {
 public:
  PipeReader(uv_loop_t* loop, int fd) {
    uv_pipe_init(loop, &pipe_, 0);
    uv_pipe_open(&pipe_, fd);
    pipe_.data = this;
    uv_read_start(
        reinterpret_cast<uv_stream_t*>(&pipe_),
        [](uv_handle_t* h, std::size_t, uv_buf_t* buf) {
          auto* self = static_cast<PipeReader*>(h->data);
          buf->base = self->buffer_;
          buf->len = sizeof(self->buffer_);
        },
        [](uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
          auto* self = static_cast<PipeReader*>(s->data);
          if (n > 0) {
            self->data.append(buf->base, static_cast<std::size_t>(n));
            ++self->reads;
            if (self->on_data) self->on_data();
          } else if (n < 0) {
            self->eof = n == UV_EOF;
            self->error = n == UV_EOF ? 0 : static_cast<int>(n);
            self->close();
            if (self->on_data) self->on_data();
          }
        });
  }
  PipeReader(const PipeReader&) = delete;
  PipeReader& operator=(const PipeReader&) = delete;

  // Closes the handle (and with it the descriptor).
  void close() {
    auto* h = reinterpret_cast<uv_handle_t*>(&pipe_);
    if (!uv_is_closing(h)) uv_close(h, nullptr);
  }

  std::string data;
  int reads = 0;
  bool eof = false;
  int error = 0;
  std::function<void()> on_data;

 private:
  uv_pipe_t pipe_;
  char buffer_[64 << 10];
};

struct FdPair {
  int read_end = -1;
  int write_end = -1;
};

inline FdPair make_pipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return {};
  return {fds[0], fds[1]};
}

// A connected pair of Unix stream sockets, as editors often give their child's stdio.
inline FdPair make_socketpair() {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return {};
  return {fds[0], fds[1]};
}

inline void ignore_sigpipe() { signal(SIGPIPE, SIG_IGN); }

}  // namespace lockroom::testing
