// ManualScheduler: a Scheduler whose clock moves only when a test says so.
//
// Unit tests and the fuzz target drive the dispatcher's timers (call timeouts, overflow answers,
// handlers that reply later) with it instead of a libuv loop. advance(ms) moves the clock forward
// and fires every timer that falls due, in order of due time and then of start order, each with
// now() set to its own due time. Timers started by a firing callback fire in the same advance()
// if they fall due within it (as libuv 1.44 does within one loop turn). Never fires anything
// from inside start_timer() or cancel_timer(). Single-threaded.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include "server/rpc/scheduler.h"

namespace lockroom::testing {

class ManualScheduler final : public rpc::Scheduler {
 public:
  using ms = std::chrono::milliseconds;

  TimerId start_timer(ms delay, std::function<void()> fn) override {
    TimerId id = next_id_++;
    std::int64_t due = now_ + (delay.count() < 0 ? 0 : delay.count());
    order_.emplace(due, id);
    timers_.emplace(id, Timer{due, std::move(fn)});
    ++started_;
    return id;
  }

  void cancel_timer(TimerId id) override {
    auto it = timers_.find(id);
    if (it == timers_.end()) return;
    order_.erase({it->second.due, id});
    timers_.erase(it);
    ++cancelled_;
  }

  // Moves the clock forward by `delta` and fires the timers that fall due, in order.
  // Returns how many fired.
  std::size_t advance(ms delta) {
    std::int64_t target = now_ + (delta.count() < 0 ? 0 : delta.count());
    std::size_t fired = 0;
    while (!order_.empty() && order_.begin()->first <= target) {
      auto [due, id] = *order_.begin();
      order_.erase(order_.begin());
      auto it = timers_.find(id);
      std::function<void()> fn = std::move(it->second.fn);
      timers_.erase(it);
      now_ = due;
      ++fired;
      fn();  // may start or cancel timers, including this scheduler's others
    }
    now_ = target;
    fired_ += fired;
    return fired;
  }
  // Fires what is due now (0 ms timers) without moving the clock.
  std::size_t run_due() { return advance(ms(0)); }

  std::int64_t now_ms() const { return now_; }
  std::size_t pending() const { return timers_.size(); }
  bool is_pending(TimerId id) const { return timers_.count(id) != 0; }
  // Delay from now until the timer's due time; -1 if it is not pending.
  std::int64_t due_in_ms(TimerId id) const {
    auto it = timers_.find(id);
    return it == timers_.end() ? -1 : it->second.due - now_;
  }
  std::uint64_t started() const { return started_; }
  std::uint64_t cancelled() const { return cancelled_; }
  std::uint64_t fired() const { return fired_; }

 private:
  struct Timer {
    std::int64_t due;
    std::function<void()> fn;
  };
  std::int64_t now_ = 0;
  TimerId next_id_ = 1;
  std::set<std::pair<std::int64_t, TimerId>> order_;
  std::map<TimerId, Timer> timers_;
  std::uint64_t started_ = 0;
  std::uint64_t cancelled_ = 0;
  std::uint64_t fired_ = 0;
};

}  // namespace lockroom::testing
