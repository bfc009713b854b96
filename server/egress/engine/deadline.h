// Deadline: one timer a proxy worker (HttpRelay, Tunnel) keeps for "nothing happened for too long".
//
// arm(limit, on_expire) starts a watch: unless touch() is called, on_expire runs once `limit`
// after the last touch() (or after arm). touch() is cheap (it notes the loop's cached time; the
// timer is only re-started when it fires early), so it can be called for every chunk relayed.
// arm() again replaces the watch; disarm() stops it. on_expire runs on the loop from the timer's
// callback; it may end the session (the worker, and this Deadline, are destroyed later by the
// ProxyCore). The timer handle is freed in its close callback. Loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include <uv.h>

namespace lockroom::egress {

class Deadline {
 public:
  explicit Deadline(uv_loop_t* loop) : loop_(loop) {}
  ~Deadline();
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;

  void arm(std::chrono::milliseconds limit, std::function<void()> on_expire);
  void touch() { last_ = uv_now(loop_); }
  void disarm();
  bool armed() const { return armed_; }

 private:
  static void on_timer(uv_timer_t* timer);
  void start_timer(std::uint64_t after_ms);

  uv_loop_t* loop_;
  uv_timer_t* timer_ = nullptr;
  std::function<void()> on_expire_;
  std::uint64_t limit_ms_ = 0;
  std::uint64_t last_ = 0;
  bool armed_ = false;
};

}  // namespace lockroom::egress
