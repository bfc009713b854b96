// A readiness check for guests running the stand-in echo agent (echo_agent.cpp): connect to the
// channel socket, send "ping\n", and be ready when "echo: ping" comes back. Used by the
// integration tests and bench/vm after a restore, where the agent's boot-time "ready" line was
// written long ago (into the template). Header-only; loop thread only.
#pragma once

#include <memory>
#include <string>

#include "server/common/uv_handle.h"
#include "server/vm/vm.h"

namespace lockroom::testing {

namespace echo_detail {

struct Probe {
  std::function<void(Result<void>)> done;
  std::string seen;
  uv_pipe_t* pipe = nullptr;
};

inline void finish(Probe* p, Result<void> r) {
  auto done = std::move(p->done);
  close_handle(p->pipe);
  delete p;
  done(std::move(r));
}

inline void on_connect(uv_connect_t* c, int status) {
  auto* p = static_cast<Probe*>(c->data);
  delete c;
  if (status < 0) return finish(p, make_error(ErrorCode::kUnavailable, std::string("channel connect: ") + uv_strerror(status)));
  struct Write {
    uv_write_t req;
    std::string data = "ping\n";
  };
  auto* w = new Write{};
  uv_buf_t buf = uv_buf_init(w->data.data(), static_cast<unsigned>(w->data.size()));
  if (uv_write(&w->req, reinterpret_cast<uv_stream_t*>(p->pipe), &buf, 1, [](uv_write_t* r, int) { delete reinterpret_cast<Write*>(r); }) != 0)
    delete w;
  uv_read_start(reinterpret_cast<uv_stream_t*>(p->pipe),
                [](uv_handle_t*, std::size_t, uv_buf_t* b) { b->base = new char[4096]; b->len = 4096; },
                [](uv_stream_t* s, ssize_t n, const uv_buf_t* b) {
                  std::unique_ptr<char[]> owned(b->base);
                  auto* p = static_cast<Probe*>(s->data);
                  if (!p || n == 0) return;
                  if (n < 0) return finish(p, make_error(ErrorCode::kUnavailable, "the channel closed before the echo"));
                  p->seen.append(b->base, static_cast<std::size_t>(n));
                  if (p->seen.find("echo: ping\n") != std::string::npos) finish(p, {});
                });
}

}  // namespace echo_detail

inline vm::ReadinessCheck echo_readiness() {
  return [](vm::Vm& guest, std::function<void(Result<void>)> done) {
    auto* p = new echo_detail::Probe{std::move(done), {}, nullptr};
    p->pipe = new_handle<uv_pipe_t>(p);
    uv_pipe_init(guest.loop(), p->pipe, 0);
    auto* c = new uv_connect_t;
    c->data = p;
    uv_pipe_connect(c, p->pipe, guest.paths().channel_socket.c_str(), echo_detail::on_connect);
  };
}

}  // namespace lockroom::testing
