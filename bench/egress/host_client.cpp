// Host-side benchmark clients; see host_client.h.
#include "bench/egress/host_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "server/common/uv_handle.h"
#include "server/egress/engine/uv_client_stream.h"

namespace lockroom::bench {

namespace {

constexpr std::size_t kReadBuffer = 256u << 10;
constexpr std::size_t kMaxResponseHead = 16u << 10;
constexpr std::uint64_t kExchangeTimeoutMs = 60000;

// A connected socket (TCP or Unix) on the loop.
class UvTransport final : public Transport {
 public:
  static Result<std::unique_ptr<Transport>> open(uv_loop_t* loop, int fd) {
    std::unique_ptr<UvTransport> transport(new UvTransport());
    bool tcp = uv_guess_handle(fd) == UV_TCP;
    uv_stream_t* stream = tcp ? reinterpret_cast<uv_stream_t*>(new_handle<uv_tcp_t>(transport.get()))
                              : reinterpret_cast<uv_stream_t*>(new_handle<uv_pipe_t>(transport.get()));
    int rc = tcp ? uv_tcp_init(loop, reinterpret_cast<uv_tcp_t*>(stream)) : uv_pipe_init(loop, reinterpret_cast<uv_pipe_t*>(stream), 0);
    if (rc < 0) {
      delete_unopened_handle(stream);
      ::close(fd);
      return make_error(ErrorCode::kUnavailable, std::string("cannot use the client socket: ") + uv_strerror(rc));
    }
    transport->stream_ = stream;
    rc = tcp ? uv_tcp_open(reinterpret_cast<uv_tcp_t*>(stream), fd) : uv_pipe_open(reinterpret_cast<uv_pipe_t*>(stream), fd);
    if (rc == 0) rc = uv_read_start(stream, on_alloc, on_read);
    if (rc < 0) return make_error(ErrorCode::kUnavailable, std::string("cannot read the client socket: ") + uv_strerror(rc));
    return std::unique_ptr<Transport>(std::move(transport));
  }
  ~UvTransport() override { close_handle(stream_); }

  void send(std::string_view bytes) override {
    if (!stream_ || bytes.empty()) return;
    if (queued_ == 0) {
      uv_buf_t buf = uv_buf_init(const_cast<char*>(bytes.data()), static_cast<unsigned>(bytes.size()));
      int written = uv_try_write(stream_, &buf, 1);
      if (written == static_cast<int>(bytes.size())) return;
      if (written > 0) bytes.remove_prefix(static_cast<std::size_t>(written));
    }
    auto* req = new WriteReq{{}, std::string(bytes)};
    uv_buf_t buf = uv_buf_init(req->data.data(), static_cast<unsigned>(req->data.size()));
    if (int rc = uv_write(&req->req, stream_, &buf, 1, on_written); rc < 0) {
      delete req;
      return closed(std::string("writing failed: ") + uv_strerror(rc));
    }
    queued_ += req->data.size();
  }

 private:
  struct WriteReq {
    uv_write_t req;
    std::string data;
  };
  UvTransport() : read_buf_(kReadBuffer, '\0') {}
  static void on_alloc(uv_handle_t* handle, std::size_t, uv_buf_t* buf) {
    auto* self = static_cast<UvTransport*>(handle->data);
    *buf = self ? uv_buf_init(self->read_buf_.data(), static_cast<unsigned>(self->read_buf_.size())) : uv_buf_init(nullptr, 0);
  }
  static void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
    auto* self = static_cast<UvTransport*>(stream->data);
    if (!self || nread == 0) return;
    if (nread > 0) {
      if (self->callbacks_.on_bytes) self->callbacks_.on_bytes(std::string_view(buf->base, static_cast<std::size_t>(nread)));
      return;
    }
    uv_read_stop(stream);
    self->closed(nread == UV_EOF ? "the connection was closed" : std::string("reading failed: ") + uv_strerror(static_cast<int>(nread)));
  }
  static void on_written(uv_write_t* w, int status) {
    std::unique_ptr<WriteReq> req(reinterpret_cast<WriteReq*>(w));
    auto* self = static_cast<UvTransport*>(w->handle->data);
    if (!self) return;
    self->queued_ -= req->data.size();
    if (status < 0) self->closed(std::string("writing failed: ") + uv_strerror(status));
  }
  void closed(const std::string& why) {
    if (callbacks_.on_closed) callbacks_.on_closed(why);
  }

  uv_stream_t* stream_ = nullptr;
  std::string read_buf_;
  std::size_t queued_ = 0;
};

// The guest side of an in-memory connection to the proxy engine. The link is shared by the
// benchmark's end (MemoryTransport) and the engine's (MemoryClientStream); either may go first.
struct MemoryLink {
  class MemoryClientStream* stream = nullptr;  // the engine's end, while it exists
  Transport::Callbacks* guest = nullptr;       // the benchmark's end, while it exists
  std::string to_engine;                       // sent by the guest, not delivered yet
  bool paused = true;                          // the engine paused reading
  uv_timer_t* deliver = nullptr;               // hands `to_engine` over on a later loop turn
  void schedule();
};

class MemoryClientStream final : public egress::ClientStream {
 public:
  explicit MemoryClientStream(std::shared_ptr<MemoryLink> link) : link_(std::move(link)) { link_->stream = this; }
  ~MemoryClientStream() override { link_->stream = nullptr; }
  // The guest reads instantly: nothing is ever buffered here.
  bool write(std::string_view bytes) override {
    if (link_->guest && link_->guest->on_bytes) link_->guest->on_bytes(bytes);
    return true;
  }
  void close_write() override { gone("the proxy closed the connection"); }
  void reset(const std::string& reason) override { gone("the proxy reset the connection: " + reason); }
  void pause_reading(bool paused) override {
    link_->paused = paused;
    if (!paused) link_->schedule();
  }
  std::size_t buffered_bytes() const override { return 0; }
  void deliver(std::string_view bytes) {
    if (callbacks_.on_data) callbacks_.on_data(bytes);
  }
  void end() {
    if (callbacks_.on_end) callbacks_.on_end();
  }

 private:
  void gone(const std::string& why) {
    if (link_->guest && link_->guest->on_closed) link_->guest->on_closed(why);
  }
  std::shared_ptr<MemoryLink> link_;
};

void MemoryLink::schedule() {
  if (!deliver || paused || to_engine.empty()) return;
  uv_timer_start(deliver, [](uv_timer_t* timer) {
    auto* link = static_cast<MemoryLink*>(timer->data);
    if (!link || !link->stream || link->paused || link->to_engine.empty()) return;
    std::string bytes = std::move(link->to_engine);
    link->to_engine.clear();
    link->stream->deliver(bytes);
  }, 0, 0);
}

class MemoryTransport final : public Transport {
 public:
  explicit MemoryTransport(std::shared_ptr<MemoryLink> link) : link_(std::move(link)) { link_->guest = &callbacks_; }
  ~MemoryTransport() override {
    link_->guest = nullptr;
    close_handle(link_->deliver);
    if (link_->stream) link_->stream->end();  // the guest closed its side
  }
  void send(std::string_view bytes) override {
    link_->to_engine.append(bytes);
    link_->schedule();
  }

 private:
  std::shared_ptr<MemoryLink> link_;
};

}  // namespace

Result<std::unique_ptr<Transport>> tcp_transport(uv_loop_t* loop, std::uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return make_error(ErrorCode::kUnavailable, "cannot connect to 127.0.0.1:" + std::to_string(port) + ": " + why);
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return UvTransport::open(loop, fd);
}

Result<std::unique_ptr<Transport>> engine_transport(uv_loop_t* loop, egress::Proxy& proxy) {
  auto link = std::make_shared<MemoryLink>();
  link->deliver = new_handle<uv_timer_t>(link.get());
  if (int rc = uv_timer_init(loop, link->deliver); rc < 0) {
    delete_unopened_handle(link->deliver);
    return make_error(ErrorCode::kUnavailable, std::string("cannot make a timer: ") + uv_strerror(rc));
  }
  auto transport = std::make_unique<MemoryTransport>(link);
  proxy.accept_http(std::make_unique<MemoryClientStream>(link));
  return std::unique_ptr<Transport>(std::move(transport));
}

Result<int> guest_socket(uv_loop_t* proxy_loop, egress::Proxy& proxy) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    return make_error(ErrorCode::kUnavailable, std::string("cannot make a socketpair: ") + std::strerror(errno));
  auto stream = egress::UvClientStream::open(proxy_loop, fds[0]);
  if (!stream) {
    ::close(fds[1]);
    return stream.error();
  }
  proxy.accept_http(std::move(stream.value()));
  return fds[1];
}

Result<std::unique_ptr<Transport>> fd_transport(uv_loop_t* loop, int fd) { return UvTransport::open(loop, fd); }

// --- HttpBenchClient ----------------------------------------------------------------------------

HttpBenchClient::HttpBenchClient(uv_loop_t* loop, std::unique_ptr<Transport> transport)
    : loop_(loop), transport_(std::move(transport)) {
  transport_->set_callbacks({[this](std::string_view bytes) { on_bytes(bytes); },
                             [this](const std::string& why) { fail(why); }});
}

Result<std::uint64_t> HttpBenchClient::exchange(std::string_view request) {
  head_.clear();
  in_body_ = false;
  body_left_ = body_size_ = 0;
  error_.clear();
  waiting_ = true;
  bool timed_out = false;
  uv_timer_t* deadline = new_handle<uv_timer_t>(&timed_out);
  uv_timer_init(loop_, deadline);
  uv_timer_start(deadline, [](uv_timer_t* timer) { *static_cast<bool*>(timer->data) = true; }, kExchangeTimeoutMs, 0);
  transport_->send(request);
  while (waiting_ && !timed_out) uv_run(loop_, UV_RUN_ONCE);
  close_handle(deadline);
  if (waiting_) {
    waiting_ = false;
    return make_error(ErrorCode::kUnavailable, "no complete response within 60 s");
  }
  if (!error_.empty()) return make_error(ErrorCode::kUnavailable, error_);
  return body_size_;
}

void HttpBenchClient::on_bytes(std::string_view bytes) {
  if (!waiting_) return fail("bytes arrived while no request was open");
  if (!in_body_) {
    std::size_t before = head_.size();
    head_.append(bytes.substr(0, kMaxResponseHead));
    std::size_t end = head_.find("\r\n\r\n");
    if (end == std::string::npos) {
      if (head_.size() >= kMaxResponseHead) fail("the response head is over 16 KiB");
      return;
    }
    head_.resize(end + 4);
    bytes.remove_prefix(head_.size() - before);
    if (head_.compare(0, 13, "HTTP/1.1 200 ") != 0) return fail("the answer was " + head_.substr(0, head_.find('\r')));
    std::string lower = head_;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    std::size_t at = lower.find("\r\ncontent-length:");
    if (at == std::string::npos) return fail("the response has no Content-Length");
    body_size_ = body_left_ = std::stoull(lower.substr(at + 17));
    in_body_ = true;
  }
  if (bytes.size() > body_left_) return fail("more bytes arrived than the response's Content-Length");
  body_left_ -= bytes.size();
  if (body_left_ == 0) waiting_ = false;
}

void HttpBenchClient::fail(const std::string& why) {
  if (!waiting_) return;
  error_ = why;
  waiting_ = false;
}

}  // namespace lockroom::bench
