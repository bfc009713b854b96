// SocketStream: non-blocking bytes over one connected stream socket (the guest's virtio-serial
// chardev, or a socketpair in tests) on a libuv loop.
//
// One uv_pipe_t owns the descriptor. Reads arrive through on_data in chunks of up to 64 KiB;
// end of stream and errors through on_closed (once). Writes are appended to one queue and go
// out with uv_try_write first, then uv_write for the rest, in order; queued_bytes() tells the
// caller how much is waiting. close() stops everything and runs `done` after libuv's close
// callback. Loop thread only; no callback throws.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include <uv.h>

#include "server/common/result.h"

namespace lockroom::channel {

class SocketStream {
 public:
  struct Callbacks {
    std::function<void(std::string_view bytes)> on_data;
    std::function<void(const std::string& why)> on_closed;  // end of stream or a failed read/write
  };

  explicit SocketStream(uv_loop_t* loop) : loop_(loop) {}
  ~SocketStream();
  SocketStream(const SocketStream&) = delete;
  SocketStream& operator=(const SocketStream&) = delete;

  // Takes ownership of `fd` (closed by close() or the destructor, even if this fails).
  Result<void> start(int fd, Callbacks callbacks);
  void write(std::string bytes);
  void stop_reading();
  std::size_t queued_bytes() const { return queue_.size() + in_flight_; }
  void close(std::function<void()> done);

 private:
  static void on_alloc(uv_handle_t* handle, std::size_t suggested, uv_buf_t* buf);
  static void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf);
  void flush();
  void closed(const std::string& why);

  uv_loop_t* loop_;
  uv_pipe_t* pipe_ = nullptr;
  Callbacks callbacks_;
  std::string read_buf_;
  std::string queue_;
  std::size_t in_flight_ = 0;
  void* write_req_ = nullptr;
  bool reading_ = false;
  bool ended_ = false;
};

}  // namespace lockroom::channel
