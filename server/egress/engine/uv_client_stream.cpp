// UvClientStream; see uv_client_stream.h.
#include "server/egress/engine/uv_client_stream.h"

#include <unistd.h>

#include <string>

namespace lockroom::egress {

namespace {
constexpr std::size_t kReadChunk = 64u << 10;

struct WriteReq {
  uv_write_t req;
  std::string data;
};
}  // namespace

struct UvClientStream::State {
  uv_any_handle handle;
  UvClientStream* owner = nullptr;
  std::size_t high_water = 0;
  std::size_t queued = 0;
  bool over_mark = false;
  bool reading = false;
  bool closing = false;
  bool shutting_down = false;  // a half-close waits for the queued writes
  bool write_shut = false;
  bool object_alive = true;   // the UvClientStream exists
  bool handle_closed = false;  // libuv is done with the handle
  std::string read_buf;

  uv_stream_t* stream() { return reinterpret_cast<uv_stream_t*>(&handle); }
  // The state goes when both the handle and the stream object are gone.
  static void on_closed(uv_handle_t* h) {
    auto* state = static_cast<State*>(h->data);
    state->handle_closed = true;
    if (!state->object_alive) delete state;
  }
  void close() {
    if (closing) return;
    closing = true;
    owner = nullptr;
    uv_close(reinterpret_cast<uv_handle_t*>(&handle), on_closed);
  }
};

Result<std::unique_ptr<UvClientStream>> UvClientStream::open(uv_loop_t* loop, int fd, std::size_t high_water) {
  auto* state = new State();
  state->high_water = high_water;
  state->read_buf.resize(kReadChunk);
  bool tcp = uv_guess_handle(fd) == UV_TCP;
  int rc = tcp ? uv_tcp_init(loop, &state->handle.tcp) : uv_pipe_init(loop, &state->handle.pipe, 0);
  if (rc < 0) {
    ::close(fd);
    delete state;
    return make_error(ErrorCode::kUnavailable, std::string("cannot use the guest connection's socket: ") + uv_strerror(rc));
  }
  state->handle.handle.data = state;
  rc = tcp ? uv_tcp_open(&state->handle.tcp, fd) : uv_pipe_open(&state->handle.pipe, fd);
  if (rc < 0) {
    ::close(fd);
    state->object_alive = false;
    state->close();
    return make_error(ErrorCode::kUnavailable, std::string("cannot use the guest connection's socket: ") + uv_strerror(rc));
  }
  std::unique_ptr<UvClientStream> stream(new UvClientStream(state));
  state->owner = stream.get();
  return stream;
}

UvClientStream::~UvClientStream() {
  State* s = state_;
  s->object_alive = false;
  s->owner = nullptr;
  if (s->handle_closed) {
    delete s;
  } else if (s->shutting_down && !s->closing) {
    uv_read_stop(s->stream());  // the shutdown callback closes the handle once the queue is out
  } else {
    s->close();
  }
}

bool UvClientStream::write(std::string_view bytes) {
  State* s = state_;
  if (s->closing || s->shutting_down || s->write_shut || bytes.empty()) return !s->over_mark;
  if (s->queued == 0) {
    uv_buf_t buf = uv_buf_init(const_cast<char*>(bytes.data()), static_cast<unsigned>(bytes.size()));
    int written = uv_try_write(s->stream(), &buf, 1);
    if (written == static_cast<int>(bytes.size())) return true;
    if (written > 0) bytes.remove_prefix(static_cast<std::size_t>(written));
  }
  auto* req = new WriteReq{};
  req->data.assign(bytes);
  uv_buf_t buf = uv_buf_init(req->data.data(), static_cast<unsigned>(req->data.size()));
  int rc = uv_write(&req->req, s->stream(), &buf, 1, [](uv_write_t* w, int status) {
    std::unique_ptr<WriteReq> done(reinterpret_cast<WriteReq*>(w));
    auto* state = static_cast<State*>(w->handle->data);
    state->queued -= done->data.size();
    UvClientStream* owner = state->owner;
    if (!owner || state->closing) return;
    if (status < 0) {
      if (owner->callbacks_.on_reset) owner->callbacks_.on_reset(std::string("writing to the guest failed: ") + uv_strerror(status));
      return;
    }
    if (state->over_mark && state->queued <= state->high_water) {
      state->over_mark = false;
      if (owner->callbacks_.on_writable) owner->callbacks_.on_writable();
    }
  });
  if (rc < 0) {
    delete req;
    return true;  // the read side reports the broken connection
  }
  s->queued += req->data.size();
  if (s->queued > s->high_water) s->over_mark = true;
  return !s->over_mark;
}

void UvClientStream::close_write() {
  State* s = state_;
  if (s->closing || s->shutting_down || s->write_shut) return;
  s->shutting_down = true;
  auto* req = new uv_shutdown_t{};
  int rc = uv_shutdown(req, s->stream(), [](uv_shutdown_t* r, int) {
    std::unique_ptr<uv_shutdown_t> owned(r);
    auto* state = static_cast<State*>(r->handle->data);
    state->shutting_down = false;
    state->write_shut = true;
    if (!state->object_alive) state->close();  // the stream object is gone: nothing else will close it
  });
  if (rc < 0) {
    delete req;
    s->shutting_down = false;
  }
}

void UvClientStream::reset(const std::string&) {
  State* s = state_;
  if (s->closing) return;
  if (s->handle.handle.type != UV_TCP || uv_tcp_close_reset(&s->handle.tcp, State::on_closed) != 0)
    uv_close(reinterpret_cast<uv_handle_t*>(&s->handle), State::on_closed);
  s->closing = true;
  s->owner = nullptr;
  s->shutting_down = false;
}

void UvClientStream::pause_reading(bool paused) {
  State* s = state_;
  if (s->closing) return;
  if (paused) {
    if (s->reading) uv_read_stop(s->stream());
    s->reading = false;
    return;
  }
  if (s->reading) return;
  int rc = uv_read_start(
      s->stream(),
      [](uv_handle_t* h, std::size_t, uv_buf_t* buf) {
        auto* state = static_cast<State*>(h->data);
        *buf = uv_buf_init(state->read_buf.data(), static_cast<unsigned>(state->read_buf.size()));
      },
      [](uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
        auto* state = static_cast<State*>(stream->data);
        UvClientStream* owner = state->owner;
        if (!owner || nread == 0) return;
        if (nread > 0) {
          if (owner->callbacks_.on_data) owner->callbacks_.on_data(std::string_view(buf->base, static_cast<std::size_t>(nread)));
          return;
        }
        uv_read_stop(stream);
        state->reading = false;
        if (nread == UV_EOF) {
          if (owner->callbacks_.on_end) owner->callbacks_.on_end();
        } else if (owner->callbacks_.on_reset) {
          owner->callbacks_.on_reset(uv_strerror(static_cast<int>(nread)));
        }
      });
  s->reading = rc == 0;
}

std::size_t UvClientStream::buffered_bytes() const { return state_->queued; }

}  // namespace lockroom::egress
