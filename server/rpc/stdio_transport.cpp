// StdioTransport; see stdio_transport.h.
#include "server/rpc/stdio_transport.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "server/common/uv_handle.h"

namespace lockroom::rpc {

namespace {

constexpr std::size_t kReadChunk = 64u << 10;

struct WriteReq {
  uv_write_t req;
  std::string data;
  StdioTransport* owner;
};

std::string uv_problem(const char* what, int status) { return std::string(what) + ": " + uv_strerror(status); }

// Opens fd as a libuv stream (pipe, socket or terminal), or returns null for a regular file.
Result<uv_stream_t*> open_stream(uv_loop_t* loop, int fd, bool readable, void* owner) {
  switch (uv_guess_handle(fd)) {
    case UV_TTY: {
      auto* tty = new_handle<uv_tty_t>(owner);
      if (int rc = uv_tty_init(loop, tty, fd, readable); rc < 0) {
        delete_unopened_handle(tty);
        return make_error(ErrorCode::kUnavailable, uv_problem("cannot use the terminal", rc));
      }
      return reinterpret_cast<uv_stream_t*>(tty);
    }
    case UV_FILE:
      return static_cast<uv_stream_t*>(nullptr);
    case UV_UNKNOWN_HANDLE:
      return make_error(ErrorCode::kUnavailable, "descriptor " + std::to_string(fd) + " is closed or of an unsupported kind");
    default: {
      auto* pipe = new_handle<uv_pipe_t>(owner);
      uv_pipe_init(loop, pipe, 0);
      if (int rc = uv_pipe_open(pipe, fd); rc < 0) {
        close_handle(pipe);
        return make_error(ErrorCode::kUnavailable, uv_problem("cannot open descriptor as a pipe", rc));
      }
      return reinterpret_cast<uv_stream_t*>(pipe);
    }
  }
}

}  // namespace

StdioTransport::StdioTransport(uv_loop_t* loop, int in_fd, int out_fd) : loop_(loop), in_fd_(in_fd), out_fd_(out_fd) {}

StdioTransport::~StdioTransport() {
  if (destroyed_flag_) *destroyed_flag_ = true;
  // Outstanding requests complete after us; make them find no owner.
  if (file_read_) file_read_->data = nullptr;
  if (write_req_) static_cast<WriteReq*>(write_req_)->owner = nullptr;
  close_handle(in_stream_);
  close_handle(out_stream_);
  close_handle(flush_idle_);
}

Result<void> StdioTransport::start(Callbacks callbacks) {
  callbacks_ = std::move(callbacks);
  auto in = open_stream(loop_, in_fd_, true, this);
  if (!in) return in.error();
  in_stream_ = *in;
  auto out = open_stream(loop_, out_fd_, false, this);
  if (!out) return out.error();
  out_stream_ = *out;
  flush_idle_ = new_handle<uv_idle_t>(this);
  uv_idle_init(loop_, flush_idle_);

  reading_ = true;
  if (in_stream_) {
    if (int rc = uv_read_start(in_stream_, on_alloc, on_read); rc < 0)
      return make_error(ErrorCode::kUnavailable, uv_problem("cannot read stdin", rc));
  } else {
    read_file();
  }
  return {};
}

void StdioTransport::on_alloc(uv_handle_t* handle, std::size_t, uv_buf_t* buf) {
  // libuv reads into the buffer and hands it to on_read before it asks again, so one buffer
  // serves every read; on_data copies what it keeps.
  auto* self = static_cast<StdioTransport*>(handle->data);
  if (!self) {
    *buf = uv_buf_init(nullptr, 0);  // libuv reports UV_ENOBUFS
    return;
  }
  if (!self->read_buffer_) self->read_buffer_ = std::make_unique<char[]>(kReadChunk);
  *buf = uv_buf_init(self->read_buffer_.get(), kReadChunk);
}

void StdioTransport::on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
  auto* self = static_cast<StdioTransport*>(stream->data);
  if (!self || nread == 0) return;
  if (nread > 0) {
    if (self->reading_) self->deliver(std::string_view(buf->base, static_cast<std::size_t>(nread)));
    return;
  }
  self->stop_reading();
  if (nread == UV_EOF) {
    if (self->callbacks_.on_eof) self->callbacks_.on_eof();
  } else {
    self->fail(uv_problem("reading stdin failed", static_cast<int>(nread)));
  }
}

void StdioTransport::read_file() {
  // The buffer lives with the request: a read still running on the thread pool after the
  // transport is gone writes into memory it owns, never into a freed transport.
  struct FileRead {
    uv_fs_t req;
    char buf[kReadChunk];
  };
  auto* read = new FileRead{};
  read->req.data = this;
  file_read_ = &read->req;
  uv_buf_t buf = uv_buf_init(read->buf, kReadChunk);
  uv_fs_read(loop_, &read->req, in_fd_, &buf, 1, file_offset_, [](uv_fs_t* req) {
    std::unique_ptr<FileRead> read(reinterpret_cast<FileRead*>(req));
    auto* self = static_cast<StdioTransport*>(req->data);
    ssize_t n = req->result;
    uv_fs_req_cleanup(req);
    if (!self) return;
    self->file_read_ = nullptr;
    if (!self->reading_) return;
    if (n > 0) {
      self->file_offset_ += n;
      if (!self->deliver(std::string_view(read->buf, static_cast<std::size_t>(n)))) return;
      if (self->reading_) self->read_file();
    } else if (n == 0) {
      self->reading_ = false;
      if (self->callbacks_.on_eof) self->callbacks_.on_eof();
    } else {
      self->reading_ = false;
      self->fail(uv_problem("reading stdin failed", static_cast<int>(n)));
    }
  });
}

// Hands a read to on_data and sends what it wrote in reply at once: one write per read, and no
// extra turn of the loop between a request and its answer. Returns false when on_data destroyed
// the transport (its owner may close and delete it from there); `this` is then gone.
bool StdioTransport::deliver(std::string_view bytes) {
  bool destroyed = false;
  destroyed_flag_ = &destroyed;
  delivering_ = true;
  callbacks_.on_data(bytes);
  if (destroyed) return false;
  destroyed_flag_ = nullptr;
  delivering_ = false;
  // Nothing to send, a write still running (its completion sends the rest), or already closed.
  if (outbuf_.empty() || failed_ || write_in_flight_ || !flush_idle_) return true;
  uv_idle_stop(flush_idle_);
  flush();
  return true;
}

void StdioTransport::stop_reading() {
  if (!reading_) return;
  reading_ = false;
  if (in_stream_) uv_read_stop(in_stream_);
  if (file_read_) file_read_->data = nullptr;  // its completion finds no owner and frees itself
  file_read_ = nullptr;
}

void StdioTransport::write(std::string_view bytes) {
  if (failed_ || bytes.empty()) return;
  outbuf_.append(bytes);
  if (!delivering_) schedule_flush();  // inside on_data, deliver() flushes when it returns
}

void StdioTransport::schedule_flush() {
  if (!flush_idle_ || uv_is_active(reinterpret_cast<uv_handle_t*>(flush_idle_))) return;
  uv_idle_start(flush_idle_, [](uv_idle_t* idle) {
    uv_idle_stop(idle);
    if (auto* self = static_cast<StdioTransport*>(idle->data)) self->flush();
  });
}

void StdioTransport::flush() {
  if (failed_ || write_in_flight_ || outbuf_.empty()) return maybe_finish_close();
  if (!out_stream_) return write_file_blocking();

  uv_buf_t buf = uv_buf_init(outbuf_.data(), static_cast<unsigned>(outbuf_.size()));
  int written = uv_try_write(out_stream_, &buf, 1);
  if (written == static_cast<int>(outbuf_.size())) {
    outbuf_.clear();
    if (on_written_) on_written_();
    return maybe_finish_close();
  }
  if (written < 0 && written != UV_EAGAIN) return fail(uv_problem("writing stdout failed", written));
  auto* req = new WriteReq{};
  req->owner = this;
  req->data = written > 0 ? outbuf_.substr(static_cast<std::size_t>(written)) : std::move(outbuf_);
  outbuf_.clear();
  in_flight_bytes_ = req->data.size();
  write_in_flight_ = true;
  write_req_ = req;
  uv_buf_t rest = uv_buf_init(req->data.data(), static_cast<unsigned>(req->data.size()));
  int rc = uv_write(&req->req, out_stream_, &rest, 1, [](uv_write_t* w, int status) {
    auto* req = reinterpret_cast<WriteReq*>(w);
    StdioTransport* self = req->owner;
    delete req;
    if (!self) return;
    self->write_req_ = nullptr;
    self->write_in_flight_ = false;
    self->in_flight_bytes_ = 0;
    if (status < 0) return self->fail(uv_problem("writing stdout failed", status));
    self->flush();
    if (self->on_written_) self->on_written_();
  });
  if (rc < 0) {
    delete req;
    write_req_ = nullptr;
    write_in_flight_ = false;
    fail(uv_problem("writing stdout failed", rc));
  }
}

void StdioTransport::write_file_blocking() {
  std::size_t done = 0;
  while (done < outbuf_.size()) {
    ssize_t n = ::write(out_fd_, outbuf_.data() + done, outbuf_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(std::string("writing stdout failed: ") + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
  outbuf_.clear();
  maybe_finish_close();
}

void StdioTransport::fail(const std::string& problem) {
  if (failed_) return;
  failed_ = true;
  outbuf_.clear();
  spdlog::warn("{}", problem);
  if (callbacks_.on_error) callbacks_.on_error(problem);
  maybe_finish_close();
}

void StdioTransport::close(std::function<void()> done) {
  if (closing_) return;
  closing_ = true;
  close_done_ = std::move(done);
  stop_reading();
  flush();
}

void StdioTransport::maybe_finish_close() {
  if (!closing_ || write_in_flight_ || (!outbuf_.empty() && !failed_)) return;
  closing_ = false;
  close_handle(in_stream_);
  close_handle(out_stream_);
  close_handle(flush_idle_);
  if (auto done = std::move(close_done_)) done();
}

}  // namespace lockroom::rpc
