// UpstreamConnection: one connected TCP socket to an upstream server, on a libuv loop.
//
// Made by UpstreamConnect (upstream.h) once a connect succeeded. Reads arrive through on_data
// until pause_reading(); the peer's end of stream through on_end; a failed read or write through
// on_error (once). write() queues bytes (first uv_try_write, then uv_write); queued_bytes() is
// the backpressure signal and on_drained fires when it returns to 0. shutdown_write() half-closes
// after what is queued. close() or the destructor stops everything (no callback after that);
// the handle is freed in libuv's close callback. Loop thread only; no callback throws.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include <uv.h>

namespace lockroom::egress::tls {

class UpstreamConnection {
 public:
  struct Callbacks {
    std::function<void(std::string_view bytes)> on_data;
    std::function<void()> on_end;                          // the server closed its side
    std::function<void(const std::string& why)> on_error;  // a read or write failed
    std::function<void()> on_drained;                      // queued_bytes() is 0 again
  };

  // Takes a connected handle whose data pointer it will own.
  UpstreamConnection(uv_tcp_t* tcp, std::string description, const sockaddr_storage& address);
  ~UpstreamConnection();
  UpstreamConnection(const UpstreamConnection&) = delete;
  UpstreamConnection& operator=(const UpstreamConnection&) = delete;

  // Starts reading. Before this, nothing is read.
  void start(Callbacks callbacks);
  void write(std::string bytes);
  std::size_t queued_bytes() const { return queued_; }
  void pause_reading();
  void resume_reading();
  void shutdown_write();
  void close();

  bool open() const { return tcp_ != nullptr; }
  // "93.184.216.34:443 (from example.test)": for log lines and errors.
  const std::string& description() const { return description_; }
  const sockaddr_storage& address() const { return address_; }

 private:
  static void on_alloc(uv_handle_t* handle, std::size_t suggested, uv_buf_t* buf);
  static void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf);
  static void on_written(uv_write_t* req, int status);
  void failed(const std::string& why);
  uv_stream_t* stream() { return reinterpret_cast<uv_stream_t*>(tcp_); }

  uv_tcp_t* tcp_;
  std::string description_;
  sockaddr_storage address_;
  Callbacks callbacks_;
  std::string read_buf_;
  std::size_t queued_ = 0;
  bool reading_ = false;
  bool ended_ = false;      // EOF seen: nothing more to read
  bool failed_ = false;
  bool write_shut_ = false;
};

}  // namespace lockroom::egress::tls
