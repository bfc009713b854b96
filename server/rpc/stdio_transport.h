// StdioTransport: non-blocking byte I/O on the editor's stdin and stdout, on a libuv loop.
//
// Reads arrive through on_data, into one buffer that the transport reuses; end of input through
// on_eof (the editor is gone). Writes are queued and coalesced: everything written during one
// turn of the loop leaves in as few syscalls as the pipe allows, in order. Writes made inside
// on_data (the replies to what was just read) leave as soon as on_data returns, in one write,
// without waiting for another turn of the loop. Works whether the descriptors are pipes,
// sockets, terminals or regular files. Loop thread only; no callback throws.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <uv.h>

#include "server/common/result.h"

namespace lockroom::rpc {

class StdioTransport {
 public:
  struct Callbacks {
    std::function<void(std::string_view bytes)> on_data;
    std::function<void()> on_eof;
    std::function<void(const std::string& problem)> on_error;  // a read or write failed for good
  };

  StdioTransport(uv_loop_t* loop, int in_fd, int out_fd);
  ~StdioTransport();
  StdioTransport(const StdioTransport&) = delete;
  StdioTransport& operator=(const StdioTransport&) = delete;

  Result<void> start(Callbacks callbacks);
  void write(std::string_view bytes);
  void stop_reading();
  // Flushes what is queued, then closes the handles; `done` runs once everything is closed.
  void close(std::function<void()> done);
  std::size_t queued_bytes() const { return outbuf_.size() + in_flight_bytes_; }
  // Runs after each write to the output completes (queued_bytes() has shrunk): for flow control.
  void on_written(std::function<void()> fn) { on_written_ = std::move(fn); }

 private:
  static void on_alloc(uv_handle_t* handle, std::size_t suggested, uv_buf_t* buf);
  static void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf);
  void read_file();
  bool deliver(std::string_view bytes);
  void schedule_flush();
  void flush();
  void write_file_blocking();
  void maybe_finish_close();
  void fail(const std::string& problem);

  uv_loop_t* loop_;
  int in_fd_;
  int out_fd_;
  Callbacks callbacks_;
  uv_stream_t* in_stream_ = nullptr;   // pipe or tty; null when stdin is a file
  uv_stream_t* out_stream_ = nullptr;  // pipe or tty; null when stdout is a file
  uv_idle_t* flush_idle_ = nullptr;
  std::unique_ptr<char[]> read_buffer_;  // where the stream reads land; on_data sees a view of it
  bool delivering_ = false;                // inside on_data: writes wait for it to return
  bool* destroyed_flag_ = nullptr;         // set by the destructor while on_data runs
  uv_fs_t* file_read_ = nullptr;  // outstanding read on a regular-file stdin
  std::int64_t file_offset_ = 0;
  std::string outbuf_;
  std::size_t in_flight_bytes_ = 0;
  bool write_in_flight_ = false;
  void* write_req_ = nullptr;  // the uv_write in flight, if any
  bool reading_ = false;
  bool closing_ = false;
  bool failed_ = false;
  std::function<void()> on_written_;
  std::function<void()> close_done_;
};

}  // namespace lockroom::rpc
