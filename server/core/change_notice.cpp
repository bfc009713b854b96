// ChangeNotice; see change_notice.h.
#include "server/core/change_notice.h"

#include <algorithm>

#include "server/common/uv_handle.h"

namespace lockroom::core {

ChangeNotice::ChangeNotice(uv_loop_t* loop, std::function<void(std::uint64_t)> tell, std::chrono::milliseconds gap)
    : tell_(std::move(tell)), debounce_(gap) {
  timer_ = new_handle<uv_timer_t>(this);
  uv_timer_init(loop, timer_);
}

ChangeNotice::~ChangeNotice() { close_handle(timer_); }

void ChangeNotice::changed() {
  ++version_;
  auto now = protocol::channel::Debounce::Clock::now();
  if (debounce_.changed(now)) return tell_(version_);
  if (uv_is_active(reinterpret_cast<uv_handle_t*>(timer_))) return;  // already armed for the pending one
  auto due = debounce_.due_in(now).value_or(std::chrono::milliseconds(0));
  uv_timer_start(timer_, [](uv_timer_t* t) {
    if (auto* self = static_cast<ChangeNotice*>(t->data)) self->fire();
  }, static_cast<std::uint64_t>(due.count()), 0);
}

void ChangeNotice::fire() {
  auto now = protocol::channel::Debounce::Clock::now();
  if (debounce_.due(now)) return tell_(version_);
  // The loop's clock ran a little ahead of the steady clock: try again when it is due.
  if (auto due = debounce_.due_in(now))
    uv_timer_start(timer_, [](uv_timer_t* t) {
      if (auto* self = static_cast<ChangeNotice*>(t->data)) self->fire();
    }, static_cast<std::uint64_t>(std::max<std::int64_t>(1, due->count())), 0);
}

}  // namespace lockroom::core
