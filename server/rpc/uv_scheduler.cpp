// UvScheduler; see uv_scheduler.h.
#include "server/rpc/uv_scheduler.h"

#include <spdlog/spdlog.h>

#include "server/common/uv_handle.h"

namespace lockroom::rpc {

namespace {
struct TimerData {
  UvScheduler* owner;
  Scheduler::TimerId id;
  std::function<void()> fn;
};
}  // namespace

UvScheduler::~UvScheduler() { cancel_all(); }

Scheduler::TimerId UvScheduler::start_timer(std::chrono::milliseconds delay, std::function<void()> fn) {
  TimerId id = next_id_++;
  auto* timer = new_handle<uv_timer_t>(nullptr);
  uv_timer_init(loop_, timer);
  timer->data = new TimerData{this, id, std::move(fn)};
  timers_[id] = timer;
  uv_timer_start(
      timer,
      [](uv_timer_t* t) {
        auto* data = static_cast<TimerData*>(t->data);
        UvScheduler* self = data->owner;
        TimerId id = data->id;
        std::function<void()> fn = std::move(data->fn);
        self->cancel_timer(id);  // frees the handle and its data before the callback runs
        try {
          fn();
        } catch (const std::exception& e) {
          spdlog::error("timer callback threw: {}", e.what());
        }
      },
      static_cast<std::uint64_t>(delay.count() < 0 ? 0 : delay.count()), 0);
  return id;
}

void UvScheduler::cancel_timer(TimerId id) {
  auto it = timers_.find(id);
  if (it == timers_.end()) return;
  uv_timer_t* timer = it->second;
  timers_.erase(it);
  uv_timer_stop(timer);
  delete static_cast<TimerData*>(timer->data);
  close_handle(timer);
}

void UvScheduler::cancel_all() {
  while (!timers_.empty()) cancel_timer(timers_.begin()->first);
}

}  // namespace lockroom::rpc
