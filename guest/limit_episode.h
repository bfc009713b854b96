// LimitEpisode: turns "the limit was met again" observations into one report per episode.
//
// A fork bomb under a process limit fails thousands of forks a second; a full disk fails every
// write. The host wants to hear about each once: an episode starts with the first observation
// that the limit was met and lasts while observations keep saying so; it ends after `quiet` with
// none, and the next hit starts a new one (and a new report). Pure: the caller passes the time.
// Used by the agent's limit watch (guest/limit_watch.h); unit-tested on its own.
#pragma once

#include <chrono>
#include <cstdint>

namespace lockroom::agent {

class LimitEpisode {
 public:
  using Clock = std::chrono::steady_clock;
  explicit LimitEpisode(std::chrono::milliseconds quiet) : quiet_(quiet) {}

  // `hit`: the limit was met since the previous observation. True when this hit starts an
  // episode, i.e. when it should be reported.
  bool observe(bool hit, Clock::time_point now) {
    if (active_ && now - last_hit_ >= quiet_) active_ = false;
    if (!hit) return false;
    last_hit_ = now;
    if (active_) return false;
    active_ = true;
    return true;
  }
  bool active() const { return active_; }

 private:
  std::chrono::milliseconds quiet_;
  bool active_ = false;
  Clock::time_point last_hit_{};
};

// Whether a counter the kernel only increases (pids.events "max", vmstat "oom_kill") rose since
// `last`; updates `last`. A first reading (last unset) only sets the baseline.
inline bool counter_rose(std::int64_t now_value, std::int64_t& last, bool& has_last) {
  bool rose = has_last && now_value > last;
  last = now_value;
  has_last = true;
  return rose;
}

}  // namespace lockroom::agent
