// QmpClient; see qmp_client.h.
#include "server/vm/qmp_client.h"

#include <spdlog/spdlog.h>

#include "server/common/uv_handle.h"

namespace lockroom::vm {

namespace {

constexpr std::uint64_t kRetryMs = 10;

struct WriteReq {
  uv_write_t req;
  std::string data;
};

}  // namespace

std::string qmp_error_text(const std::string& command, const nlohmann::json& error) {
  std::string desc = error.is_object() && error.contains("desc") && error["desc"].is_string() ? error["desc"].get<std::string>() : "no description";
  std::string cls = error.is_object() && error.contains("class") && error["class"].is_string() ? error["class"].get<std::string>() : "Error";
  return "QEMU refused " + command + ": " + desc + " (" + cls + ")";
}

QmpClient::QmpClient(uv_loop_t* loop) : loop_(loop) {}

QmpClient::~QmpClient() {
  *alive_ = false;
  for (auto& [id, p] : pending_) close_handle(p.timer);
  pending_.clear();
  close_handle(connect_timer_);
  close_handle(pipe_);
}

void QmpClient::connect(const std::filesystem::path& socket, ms timeout, std::function<void(Result<void>)> on_ready) {
  socket_path_ = socket;
  on_ready_ = std::move(on_ready);
  connect_deadline_ms_ = uv_now(loop_) + static_cast<std::uint64_t>(timeout.count());
  connect_timer_ = new_handle<uv_timer_t>(this);
  uv_timer_init(loop_, connect_timer_);
  try_connect();
}

void QmpClient::try_connect() {
  pipe_ = new_handle<uv_pipe_t>(this);
  uv_pipe_init(loop_, pipe_, 0);
  auto* req = new uv_connect_t;
  req->data = this;
  // The request outlives us if we are destroyed meanwhile: it then finds the pipe's data null.
  uv_pipe_connect(req, pipe_, socket_path_.c_str(), [](uv_connect_t* req, int status) {
    auto* pipe = reinterpret_cast<uv_pipe_t*>(req->handle);
    delete req;
    if (auto* self = static_cast<QmpClient*>(pipe->data)) self->on_connected(status);
  });
}

void QmpClient::on_connected(int status) {
  if (status < 0) {
    close_handle(pipe_);
    if (uv_now(loop_) >= connect_deadline_ms_)
      return finish_connect(make_error(ErrorCode::kUnavailable, "QEMU's QMP socket " + socket_path_.string() +
                                                                    " did not accept a connection in time (" +
                                                                    uv_strerror(status) + "); see the sandbox's console.log"));
    uv_timer_start(connect_timer_, [](uv_timer_t* t) {
      if (auto* self = static_cast<QmpClient*>(t->data)) self->try_connect();
    }, kRetryMs, 0);
    return;
  }
  // Deadline for greeting + capabilities.
  std::uint64_t left = connect_deadline_ms_ > uv_now(loop_) ? connect_deadline_ms_ - uv_now(loop_) : 1;
  uv_timer_start(connect_timer_, [](uv_timer_t* t) {
    if (auto* self = static_cast<QmpClient*>(t->data))
      if (!self->ready_) self->fail_connection("QEMU sent no QMP greeting in time");
  }, left, 0);
  uv_read_start(reinterpret_cast<uv_stream_t*>(pipe_),
                [](uv_handle_t*, std::size_t, uv_buf_t* buf) {
                  buf->base = new char[65536];
                  buf->len = 65536;
                },
                [](uv_stream_t* stream, ssize_t n, const uv_buf_t* buf) {
                  std::unique_ptr<char[]> owned(buf->base);
                  auto* self = static_cast<QmpClient*>(stream->data);
                  if (!self || n == 0) return;
                  if (n < 0) return self->fail_connection(n == UV_EOF ? "QEMU closed the QMP connection" : std::string("QMP read failed: ") + uv_strerror(static_cast<int>(n)));
                  self->inbuf_.append(buf->base, static_cast<std::size_t>(n));
                  auto alive = self->alive_;
                  std::size_t nl;
                  while (*alive && self->pipe_ && (nl = self->inbuf_.find('\n')) != std::string::npos) {
                    std::string line = self->inbuf_.substr(0, nl);
                    self->inbuf_.erase(0, nl + 1);
                    self->on_line(line);
                  }
                  if (*alive && self->inbuf_.size() > kMaxLineBytes) self->fail_connection("QEMU sent a QMP line longer than 1 MiB");
                });
}

void QmpClient::on_line(const std::string& line) {
  if (line.find_first_not_of(" \r\t") == std::string::npos) return;
  auto msg = nlohmann::json::parse(line, nullptr, false);
  if (msg.is_discarded() || !msg.is_object()) return fail_connection("QEMU sent a QMP line that is not a JSON object");
  if (!greeted_) {
    if (!msg.contains("QMP")) return fail_connection("QEMU's first QMP message is not a greeting");
    greeted_ = true;
    std::uint64_t id = next_id_++;
    pending_[id] = Pending{"qmp_capabilities", [this](Result<nlohmann::json> r) {
                             if (!r) return finish_connect(r.error());
                             ready_ = true;
                             uv_timer_stop(connect_timer_);
                             finish_connect({});
                           }};
    send({{"execute", "qmp_capabilities"}, {"id", id}});
    return;
  }
  if (msg.contains("event")) {
    if (on_event_ && msg["event"].is_string()) on_event_(msg["event"].get<std::string>(), msg.value("data", nlohmann::json::object()));
    return;
  }
  if (!msg.contains("id") || !msg["id"].is_number_unsigned()) return;  // a reply to no command of ours
  std::uint64_t id = msg["id"].get<std::uint64_t>();
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  if (msg.contains("return")) return complete(id, msg["return"]);
  if (msg.contains("error")) return complete(id, make_error(ErrorCode::kUnavailable, qmp_error_text(it->second.command, msg["error"])));
  complete(id, make_error(ErrorCode::kInternal, "QEMU's reply to " + it->second.command + " has neither return nor error"));
}

void QmpClient::execute(const std::string& command, nlohmann::json arguments, ms timeout, ReplyFn on_reply) {
  if (!ready_ || !pipe_) {
    on_reply(make_error(ErrorCode::kWrongState, "cannot send " + command + ": the QMP connection is not open"));
    return;
  }
  std::uint64_t id = next_id_++;
  Pending p{command, std::move(on_reply), new_handle<uv_timer_t>(this)};
  uv_timer_init(loop_, p.timer);
  uv_timer_start(p.timer, [](uv_timer_t* t) {
    auto* self = static_cast<QmpClient*>(t->data);
    if (!self) return;
    for (auto& [pending_id, entry] : self->pending_)
      if (entry.timer == t)
        return self->complete(pending_id, make_error(ErrorCode::kUnavailable, "QEMU did not answer " + entry.command + " in time"));
  }, static_cast<std::uint64_t>(timeout.count()), 0);
  pending_[id] = std::move(p);
  nlohmann::json msg{{"execute", command}, {"id", id}};
  if (!arguments.is_null()) msg["arguments"] = std::move(arguments);
  send(msg);
}

void QmpClient::complete(std::uint64_t id, Result<nlohmann::json> result) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  Pending p = std::move(it->second);
  pending_.erase(it);
  close_handle(p.timer);
  if (p.on_reply) p.on_reply(std::move(result));
}

void QmpClient::send(const nlohmann::json& message) {
  if (!pipe_) return;
  auto* req = new WriteReq{};
  req->data = message.dump() + "\n";
  uv_buf_t buf = uv_buf_init(req->data.data(), static_cast<unsigned>(req->data.size()));
  int rc = uv_write(&req->req, reinterpret_cast<uv_stream_t*>(pipe_), &buf, 1, [](uv_write_t* r, int) {
    delete reinterpret_cast<WriteReq*>(r);
  });
  if (rc < 0) {
    delete req;
    fail_connection(std::string("QMP write failed: ") + uv_strerror(rc));
  }
}

void QmpClient::finish_connect(Result<void> result) {
  if (!on_ready_) return;
  auto fn = std::move(on_ready_);
  on_ready_ = nullptr;
  if (!result.ok()) drop_socket();
  fn(std::move(result));
}

void QmpClient::drop_socket() {
  close_handle(pipe_);
  if (connect_timer_) uv_timer_stop(connect_timer_);
}

void QmpClient::fail_connection(const std::string& reason) {
  auto alive = alive_;
  bool was_ready = ready_;
  ready_ = false;
  drop_socket();
  if (on_ready_) finish_connect(make_error(ErrorCode::kUnavailable, reason));
  if (!*alive) return;
  while (!pending_.empty() && *alive) complete(pending_.begin()->first, make_error(ErrorCode::kUnavailable, reason));
  if (*alive && was_ready && on_closed_) on_closed_(reason);
}

void QmpClient::close() {
  auto alive = alive_;
  ready_ = false;
  on_ready_ = nullptr;
  drop_socket();
  while (!pending_.empty() && *alive) complete(pending_.begin()->first, make_error(ErrorCode::kCancelled, "the QMP connection was closed"));
}

}  // namespace lockroom::vm
