// UpstreamConnection; see upstream_connection.h.
#include "server/egress/tls/upstream_connection.h"

#include <memory>

#include "server/common/uv_handle.h"

namespace lockroom::egress::tls {

namespace {

constexpr std::size_t kReadChunk = 64u << 10;

struct WriteReq {
  uv_write_t req;
  std::string data;
};

}  // namespace

UpstreamConnection::UpstreamConnection(uv_tcp_t* tcp, std::string description, const sockaddr_storage& address)
    : tcp_(tcp), description_(std::move(description)), address_(address) {
  tcp_->data = this;
}

UpstreamConnection::~UpstreamConnection() { close(); }

void UpstreamConnection::start(Callbacks callbacks) {
  callbacks_ = std::move(callbacks);
  read_buf_.resize(kReadChunk);
  resume_reading();
}

void UpstreamConnection::on_alloc(uv_handle_t* handle, std::size_t, uv_buf_t* buf) {
  auto* self = static_cast<UpstreamConnection*>(handle->data);
  *buf = self ? uv_buf_init(self->read_buf_.data(), static_cast<unsigned>(self->read_buf_.size())) : uv_buf_init(nullptr, 0);
}

void UpstreamConnection::on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
  auto* self = static_cast<UpstreamConnection*>(stream->data);
  if (!self || nread == 0) return;
  if (nread > 0) {
    if (self->callbacks_.on_data) self->callbacks_.on_data(std::string_view(buf->base, static_cast<std::size_t>(nread)));
    return;
  }
  self->reading_ = false;
  uv_read_stop(stream);
  if (nread == UV_EOF) {
    self->ended_ = true;
    if (self->callbacks_.on_end) self->callbacks_.on_end();
    return;
  }
  self->failed("reading from " + self->description_ + " failed: " + uv_strerror(static_cast<int>(nread)));
}

void UpstreamConnection::write(std::string bytes) {
  if (!tcp_ || failed_ || write_shut_ || bytes.empty()) return;
  if (queued_ == 0) {
    uv_buf_t buf = uv_buf_init(bytes.data(), static_cast<unsigned>(bytes.size()));
    int written = uv_try_write(stream(), &buf, 1);
    if (written == static_cast<int>(bytes.size())) return;
    if (written < 0 && written != UV_EAGAIN)
      return failed("writing to " + description_ + " failed: " + uv_strerror(written));
    if (written > 0) bytes.erase(0, static_cast<std::size_t>(written));
  }
  auto* req = new WriteReq{};
  req->data = std::move(bytes);
  uv_buf_t buf = uv_buf_init(req->data.data(), static_cast<unsigned>(req->data.size()));
  if (int rc = uv_write(&req->req, stream(), &buf, 1, on_written); rc < 0) {
    delete req;
    return failed("writing to " + description_ + " failed: " + uv_strerror(rc));
  }
  queued_ += req->data.size();
}

void UpstreamConnection::on_written(uv_write_t* w, int status) {
  std::unique_ptr<WriteReq> req(reinterpret_cast<WriteReq*>(w));
  auto* self = static_cast<UpstreamConnection*>(w->handle->data);
  if (!self) return;  // closed: the write was cancelled
  self->queued_ -= req->data.size();
  if (status < 0) return self->failed("writing to " + self->description_ + " failed: " + uv_strerror(status));
  if (self->queued_ == 0 && self->callbacks_.on_drained) self->callbacks_.on_drained();
}

void UpstreamConnection::pause_reading() {
  if (!tcp_ || !reading_) return;
  reading_ = false;
  uv_read_stop(stream());
}

void UpstreamConnection::resume_reading() {
  if (!tcp_ || reading_ || ended_ || failed_) return;
  if (int rc = uv_read_start(stream(), on_alloc, on_read); rc < 0)
    return failed("reading from " + description_ + " failed: " + uv_strerror(rc));
  reading_ = true;
}

void UpstreamConnection::shutdown_write() {
  if (!tcp_ || failed_ || write_shut_) return;
  write_shut_ = true;
  auto* req = new uv_shutdown_t{};
  int rc = uv_shutdown(req, stream(), [](uv_shutdown_t* r, int status) {
    std::unique_ptr<uv_shutdown_t> owned(r);
    auto* self = static_cast<UpstreamConnection*>(r->handle->data);
    if (self && status < 0 && status != UV_ENOTCONN)
      self->failed("closing the sending side to " + self->description_ + " failed: " + uv_strerror(status));
  });
  if (rc < 0) {
    delete req;
    failed("closing the sending side to " + description_ + " failed: " + uv_strerror(rc));
  }
}

void UpstreamConnection::failed(const std::string& why) {
  if (failed_) return;
  failed_ = true;
  pause_reading();
  if (callbacks_.on_error) callbacks_.on_error(why);
}

void UpstreamConnection::close() {
  reading_ = false;
  queued_ = 0;
  close_handle(tcp_);
}

}  // namespace lockroom::egress::tls
