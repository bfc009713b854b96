// SocketStream; see socket_stream.h.
#include "server/channel/socket_stream.h"

#include <unistd.h>

#include <memory>

#include "server/common/uv_handle.h"

namespace lockroom::channel {

namespace {

constexpr std::size_t kReadChunk = 64u << 10;

struct WriteReq {
  uv_write_t req;
  std::string data;
  SocketStream* owner;
};

}  // namespace

SocketStream::~SocketStream() {
  if (write_req_) static_cast<WriteReq*>(write_req_)->owner = nullptr;
  close_handle(pipe_);
}

Result<void> SocketStream::start(int fd, Callbacks callbacks) {
  callbacks_ = std::move(callbacks);
  pipe_ = new_handle<uv_pipe_t>(this);
  uv_pipe_init(loop_, pipe_, 0);
  if (int rc = uv_pipe_open(pipe_, fd); rc < 0) {
    ::close(fd);
    close_handle(pipe_);
    ended_ = true;
    return make_error(ErrorCode::kUnavailable, std::string("cannot use the guest channel socket: ") + uv_strerror(rc));
  }
  read_buf_.resize(kReadChunk);
  if (int rc = uv_read_start(reinterpret_cast<uv_stream_t*>(pipe_), on_alloc, on_read); rc < 0) {
    close_handle(pipe_);
    ended_ = true;
    return make_error(ErrorCode::kUnavailable, std::string("cannot read the guest channel socket: ") + uv_strerror(rc));
  }
  reading_ = true;
  return {};
}

void SocketStream::on_alloc(uv_handle_t* handle, std::size_t, uv_buf_t* buf) {
  auto* self = static_cast<SocketStream*>(handle->data);
  if (!self) {
    *buf = uv_buf_init(nullptr, 0);
    return;
  }
  *buf = uv_buf_init(self->read_buf_.data(), static_cast<unsigned>(self->read_buf_.size()));
}

void SocketStream::on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
  auto* self = static_cast<SocketStream*>(stream->data);
  if (!self || nread == 0 || !self->reading_) return;
  if (nread > 0) {
    self->callbacks_.on_data(std::string_view(buf->base, static_cast<std::size_t>(nread)));
    return;
  }
  self->closed(nread == UV_EOF ? "the guest closed the channel" : std::string("reading the guest channel failed: ") + uv_strerror(static_cast<int>(nread)));
}

void SocketStream::stop_reading() {
  if (!reading_ || !pipe_) return;
  reading_ = false;
  uv_read_stop(reinterpret_cast<uv_stream_t*>(pipe_));
}

void SocketStream::write(std::string bytes) {
  if (ended_ || !pipe_ || bytes.empty()) return;
  if (queue_.empty()) {
    queue_ = std::move(bytes);
  } else {
    queue_.append(bytes);
  }
  flush();
}

void SocketStream::flush() {
  if (ended_ || !pipe_ || write_req_ || queue_.empty()) return;
  auto* stream = reinterpret_cast<uv_stream_t*>(pipe_);
  uv_buf_t buf = uv_buf_init(queue_.data(), static_cast<unsigned>(queue_.size()));
  int written = uv_try_write(stream, &buf, 1);
  if (written == static_cast<int>(queue_.size())) {
    queue_.clear();
    return;
  }
  if (written < 0 && written != UV_EAGAIN) return closed(std::string("writing the guest channel failed: ") + uv_strerror(written));
  auto* req = new WriteReq{};
  req->owner = this;
  req->data = written > 0 ? queue_.substr(static_cast<std::size_t>(written)) : std::move(queue_);
  queue_.clear();
  in_flight_ = req->data.size();
  write_req_ = req;
  uv_buf_t rest = uv_buf_init(req->data.data(), static_cast<unsigned>(req->data.size()));
  int rc = uv_write(&req->req, stream, &rest, 1, [](uv_write_t* w, int status) {
    std::unique_ptr<WriteReq> req(reinterpret_cast<WriteReq*>(w));
    SocketStream* self = req->owner;
    if (!self) return;
    self->write_req_ = nullptr;
    self->in_flight_ = 0;
    if (status == UV_ECANCELED) return;
    if (status < 0) return self->closed(std::string("writing the guest channel failed: ") + uv_strerror(status));
    self->flush();
  });
  if (rc < 0) {
    delete req;
    write_req_ = nullptr;
    in_flight_ = 0;
    closed(std::string("writing the guest channel failed: ") + uv_strerror(rc));
  }
}

void SocketStream::closed(const std::string& why) {
  if (ended_) return;
  ended_ = true;
  stop_reading();
  queue_.clear();
  if (callbacks_.on_closed) callbacks_.on_closed(why);
}

void SocketStream::close(std::function<void()> done) {
  ended_ = true;
  reading_ = false;
  queue_.clear();
  if (write_req_) static_cast<WriteReq*>(write_req_)->owner = nullptr;
  write_req_ = nullptr;
  in_flight_ = 0;
  if (!pipe_) {
    if (done) done();
    return;
  }
  auto* base = reinterpret_cast<uv_handle_t*>(pipe_);
  pipe_ = nullptr;
  base->data = new std::function<void()>(std::move(done));
  uv_close(base, [](uv_handle_t* h) {
    auto* done = static_cast<std::function<void()>*>(h->data);
    delete reinterpret_cast<uv_any_handle*>(h);
    if (done && *done) (*done)();
    delete done;
  });
}

}  // namespace lockroom::channel
