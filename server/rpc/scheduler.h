// Scheduler: one-shot timers, abstracted so the dispatcher can be tested with a manual clock.
//
// The real implementation (UvScheduler, in uv_scheduler.h) runs timers on the libuv loop; tests
// use ManualScheduler from tests/fakes. Callbacks run on the loop thread and must not throw.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

namespace lockroom::rpc {

class Scheduler {
 public:
  using TimerId = std::uint64_t;
  virtual ~Scheduler() = default;
  virtual TimerId start_timer(std::chrono::milliseconds delay, std::function<void()> fn) = 0;
  // Cancelling an id that already fired or was cancelled is a no-op.
  virtual void cancel_timer(TimerId id) = 0;
};

}  // namespace lockroom::rpc
