// ChannelProbe; see channel_probe.h.
#include "server/vm/channel_probe.h"

#include <memory>

#include "server/common/uv_handle.h"

namespace lockroom::vm {

ChannelProbe::ChannelProbe(uv_loop_t* loop, std::filesystem::path socket, std::function<void(Result<std::string>)> done)
    : loop_(loop), socket_(std::move(socket)), done_(std::move(done)) {}

ChannelProbe::~ChannelProbe() {
  close_handle(pipe_);
  close_handle(retry_);
}

void ChannelProbe::start() {
  retry_ = new_handle<uv_timer_t>(this);
  uv_timer_init(loop_, retry_);
  attempt();
}

void ChannelProbe::attempt() {
  pipe_ = new_handle<uv_pipe_t>(this);
  uv_pipe_init(loop_, pipe_, 0);
  auto* req = new uv_connect_t;
  uv_pipe_connect(req, pipe_, socket_.c_str(), [](uv_connect_t* req, int status) {
    auto* pipe = reinterpret_cast<uv_pipe_t*>(req->handle);
    delete req;
    auto* self = static_cast<ChannelProbe*>(pipe->data);
    if (!self) return;
    if (status < 0) {
      close_handle(self->pipe_);
      uv_timer_start(self->retry_, [](uv_timer_t* t) {
        if (auto* s = static_cast<ChannelProbe*>(t->data)) s->attempt();
      }, 10, 0);
      return;
    }
    uv_read_start(reinterpret_cast<uv_stream_t*>(pipe),
                  [](uv_handle_t*, std::size_t, uv_buf_t* b) { b->base = new char[4096]; b->len = 4096; },
                  [](uv_stream_t* s, ssize_t n, const uv_buf_t* b) {
                    std::unique_ptr<char[]> owned(b->base);
                    auto* self = static_cast<ChannelProbe*>(s->data);
                    if (!self || n == 0) return;
                    uv_read_stop(s);
                    if (n < 0)
                      return self->finish(make_error(ErrorCode::kUnavailable, std::string("the guest channel closed before the guest spoke (") +
                                                                                 uv_strerror(static_cast<int>(n)) + ")"));
                    self->finish(std::string(b->base, static_cast<std::size_t>(n)));
                  });
  });
}

void ChannelProbe::finish(Result<std::string> r) {
  if (!r.ok()) close_handle(pipe_);
  if (auto done = std::move(done_)) done(std::move(r));
}

uv_pipe_t* ChannelProbe::take_pipe() {
  uv_pipe_t* p = pipe_;
  if (p) p->data = nullptr;
  pipe_ = nullptr;
  return p;
}

}  // namespace lockroom::vm
