// Debounce: "something changed" told at most once per gap, and never lost.
//
// Used on both ends of the change notifications: the agent's workspace.changed (one per watched
// workspace) and the server's changes/changed (one per sandbox). The first change after a quiet
// gap is told at once (leading edge); changes within the gap after a notice are folded into one
// notice told when the gap has passed (trailing edge), so the last change is always followed by
// a notice. Pure: the caller passes the time and arms its own timer from due_in(). Not
// thread-safe; one loop thread.
#pragma once

#include <chrono>
#include <optional>

namespace lockroom::protocol::channel {

class Debounce {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Debounce(std::chrono::milliseconds gap) : gap_(gap) {}

  // A change at `now`. True: tell it now (and the gap starts). False: it is pending, told when
  // due() says so.
  bool changed(Clock::time_point now) {
    if (!last_ || now - *last_ >= gap_) {
      last_ = now;
      pending_ = false;
      return true;
    }
    pending_ = true;
    return false;
  }

  // True once a pending change's gap has passed: tell it now (the next gap starts).
  bool due(Clock::time_point now) {
    if (!pending_ || now - *last_ < gap_) return false;
    last_ = now;
    pending_ = false;
    return true;
  }

  bool pending() const { return pending_; }

  // How long until a pending change is due (zero when it is), or nothing when none is pending.
  std::optional<std::chrono::milliseconds> due_in(Clock::time_point now) const {
    if (!pending_) return std::nullopt;
    auto left = *last_ + gap_ - now;
    if (left <= Clock::duration::zero()) return std::chrono::milliseconds(0);
    return std::chrono::ceil<std::chrono::milliseconds>(left);
  }

  // Forgets a pending change (what it was about is gone).
  void clear() { pending_ = false; }

 private:
  std::chrono::milliseconds gap_;
  std::optional<Clock::time_point> last_;
  bool pending_ = false;
};

}  // namespace lockroom::protocol::channel
