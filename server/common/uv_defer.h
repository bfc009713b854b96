// defer(): run a function on a later turn of the libuv loop.
//
// For work that must not happen inside the callback that asks for it, such as freeing the
// object whose callback is running. Loop thread only; `fn` must not throw.
#pragma once

#include <functional>

#include <uv.h>

#include "server/common/uv_handle.h"

namespace lockroom {

inline void defer(uv_loop_t* loop, std::function<void()> fn) {
  struct Deferred {
    uv_timer_t* timer;
    std::function<void()> fn;
  };
  auto* d = new Deferred{new_handle<uv_timer_t>(nullptr), std::move(fn)};
  d->timer->data = d;
  uv_timer_init(loop, d->timer);
  uv_timer_start(d->timer, [](uv_timer_t* t) {
    auto* d = static_cast<Deferred*>(t->data);
    auto fn = std::move(d->fn);
    close_handle(d->timer);
    delete d;
    fn();
  }, 0, 0);
}

}  // namespace lockroom
