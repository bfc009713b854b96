// Host-side clients of the egress benchmark: one small HTTP/1.1 client on the libuv loop, over
// interchangeable transports, so two rows of the table differ only in the path the bytes take.
//
//   tcp_transport      a TCP connection straight to the server (the "direct" peer)
//   engine_transport   the host proxy engine (egress::Proxy::accept_http) with the benchmark
//                      playing the guest side in memory, through the ClientStream interface
//                      every guest connection uses: what is measured is the engine alone
//   guest_socket       the same engine with the guest side on a socketpair (UvClientStream),
//                      the path of the engine's unit tests: the engine plus one more socket hop;
//                      fd_transport() reads the guest's end, on another loop (a client thread)
//
// HttpBenchClient sends one request at a time (keep-alive) and reads the response's head and
// Content-Length body, counting bytes without copying them. Loop thread only; a benchmark, so a
// failure is a Result the caller reports, never a crash.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <uv.h>

#include "server/common/result.h"
#include "server/egress/engine/proxy.h"

namespace lockroom::bench {

class Transport {
 public:
  struct Callbacks {
    std::function<void(std::string_view bytes)> on_bytes;
    std::function<void(const std::string& why)> on_closed;  // the other side closed or broke
  };
  virtual ~Transport() = default;
  void set_callbacks(Callbacks callbacks) { callbacks_ = std::move(callbacks); }
  virtual void send(std::string_view bytes) = 0;

 protected:
  Callbacks callbacks_;
};

Result<std::unique_ptr<Transport>> tcp_transport(uv_loop_t* loop, std::uint16_t port);
Result<std::unique_ptr<Transport>> engine_transport(uv_loop_t* loop, egress::Proxy& proxy);
// The guest's end of a new socketpair whose other end went to proxy.accept_http (on `proxy_loop`).
Result<int> guest_socket(uv_loop_t* proxy_loop, egress::Proxy& proxy);
// A connected socket (TCP or Unix) as a Transport; takes `fd`, also on failure.
Result<std::unique_ptr<Transport>> fd_transport(uv_loop_t* loop, int fd);

class HttpBenchClient {
 public:
  HttpBenchClient(uv_loop_t* loop, std::unique_ptr<Transport> transport);
  // Sends `request` and runs the loop until its response is complete (or 60 s passed): the
  // body's size, or what went wrong (a status other than 200 is an error).
  Result<std::uint64_t> exchange(std::string_view request);

 private:
  void on_bytes(std::string_view bytes);
  void fail(const std::string& why);

  uv_loop_t* loop_;
  std::unique_ptr<Transport> transport_;
  std::string head_;
  bool in_body_ = false;
  bool waiting_ = false;
  std::uint64_t body_left_ = 0;
  std::uint64_t body_size_ = 0;
  std::string error_;
};

}  // namespace lockroom::bench
