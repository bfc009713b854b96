// UvScheduler: Scheduler timers on a libuv loop. Loop thread only.
#pragma once

#include <map>
#include <memory>

#include <uv.h>

#include "server/rpc/scheduler.h"

namespace lockroom::rpc {

class UvScheduler final : public Scheduler {
 public:
  explicit UvScheduler(uv_loop_t* loop) : loop_(loop) {}
  ~UvScheduler() override;
  TimerId start_timer(std::chrono::milliseconds delay, std::function<void()> fn) override;
  void cancel_timer(TimerId id) override;
  // Closes every timer still pending (their callbacks never run).
  void cancel_all();

 private:
  struct Timer;
  uv_loop_t* loop_;
  TimerId next_id_ = 1;
  std::map<TimerId, uv_timer_t*> timers_;
};

}  // namespace lockroom::rpc
