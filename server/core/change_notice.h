// ChangeNotice: one sandbox's "the workspace changed" told to the world, debounced, with a version.
//
// The Sandbox calls changed() for each workspace.changed its agent sends (itself debounced in the
// guest, but the guest is hostile: this bounds what reaches the editor whatever it sends). Each
// call raises the version by one; tell(version) runs at most once per gap, at once after a quiet
// gap and otherwise when the gap has passed, always with the latest version, so the last change
// is always told (protocol::channel::Debounce). Loop thread only; destroying it drops a pending
// notice and frees its timer in the close callback.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include <uv.h>

#include "protocol/channel/debounce.h"

namespace lockroom::core {

class ChangeNotice {
 public:
  static constexpr std::chrono::milliseconds kGap{250};

  ChangeNotice(uv_loop_t* loop, std::function<void(std::uint64_t version)> tell, std::chrono::milliseconds gap = kGap);
  ~ChangeNotice();
  ChangeNotice(const ChangeNotice&) = delete;
  ChangeNotice& operator=(const ChangeNotice&) = delete;

  void changed();
  std::uint64_t version() const { return version_; }

 private:
  void fire();

  std::function<void(std::uint64_t)> tell_;
  protocol::channel::Debounce debounce_;
  uv_timer_t* timer_ = nullptr;
  std::uint64_t version_ = 0;
};

}  // namespace lockroom::core
