// UvClientStream: a ClientStream over a socket descriptor on the libuv loop (TCP or Unix).
//
// For a guest connection that reaches the host as a plain socket (tests, benchmarks, a host-side
// listener); the channel has its own adapter. Writes are queued in libuv with the queue size as
// the backpressure signal (write() says false above `high_water`, on_writable fires when the
// queue is back at or below it). Destroying the stream after close_write() lets the queued bytes
// and the half-close finish on their own (the handle frees itself afterwards); after reset() or
// without close_write() the handle is closed at once. Loop thread only.
#pragma once

#include <cstddef>
#include <memory>

#include <uv.h>

#include "server/common/result.h"
#include "server/egress/engine/client_stream.h"

namespace lockroom::egress {

class UvClientStream final : public ClientStream {
 public:
  // Takes ownership of `fd` (a connected stream socket), also on failure.
  static Result<std::unique_ptr<UvClientStream>> open(uv_loop_t* loop, int fd, std::size_t high_water = 256u << 10);
  ~UvClientStream() override;
  UvClientStream(const UvClientStream&) = delete;
  UvClientStream& operator=(const UvClientStream&) = delete;

  bool write(std::string_view bytes) override;
  void close_write() override;
  void reset(const std::string& reason) override;
  void pause_reading(bool paused) override;
  std::size_t buffered_bytes() const override;

 private:
  struct State;
  explicit UvClientStream(State* state) : state_(state) {}
  State* state_;  // owned by the handle: freed in its close callback
};

}  // namespace lockroom::egress
