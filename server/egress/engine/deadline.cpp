// Deadline; see deadline.h.
#include "server/egress/engine/deadline.h"

#include <algorithm>

#include "server/common/uv_handle.h"

namespace lockroom::egress {

Deadline::~Deadline() { close_handle(timer_); }

void Deadline::arm(std::chrono::milliseconds limit, std::function<void()> on_expire) {
  on_expire_ = std::move(on_expire);
  limit_ms_ = static_cast<std::uint64_t>(std::max<std::int64_t>(limit.count(), 1));
  armed_ = true;
  // The loop's cached time can be a whole callback old; the deadline counts from now.
  uv_update_time(loop_);
  last_ = uv_now(loop_);
  start_timer(limit_ms_);
}

void Deadline::disarm() {
  armed_ = false;
  on_expire_ = nullptr;
  if (timer_) uv_timer_stop(timer_);
}

void Deadline::start_timer(std::uint64_t after_ms) {
  if (!timer_) {
    timer_ = new_handle<uv_timer_t>(this);
    if (uv_timer_init(loop_, timer_) < 0) {
      delete_unopened_handle(timer_);
      timer_ = nullptr;
      return;  // no timer: the watch cannot fire (the connection is merely not limited)
    }
  }
  uv_timer_start(timer_, on_timer, after_ms, 0);
}

void Deadline::on_timer(uv_timer_t* timer) {
  auto* self = static_cast<Deadline*>(timer->data);
  if (!self || !self->armed_) return;
  std::uint64_t quiet = uv_now(self->loop_) - self->last_;
  if (quiet < self->limit_ms_) return self->start_timer(self->limit_ms_ - quiet);
  self->armed_ = false;
  auto expire = std::move(self->on_expire_);
  self->on_expire_ = nullptr;
  if (expire) expire();
}

}  // namespace lockroom::egress
