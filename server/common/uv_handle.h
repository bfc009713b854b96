// Ownership of raw libuv handles, the way uvw and node do it.
//
// A handle is allocated on the heap, owned by exactly one object, and freed only in libuv's
// close callback, never while libuv still holds the pointer. Owners call close_handle() from
// their own close path; after that the handle's `data` is null, so a late callback can tell
// its owner is gone. Loop thread only.
#pragma once

#include <uv.h>

namespace lockroom {

// Every handle is allocated as a uv_any_handle, so one deleter fits all and a pipe or terminal
// can be held through a uv_stream_t* without losing how to free it.
template <typename H>
H* new_handle(void* owner) {
  auto* storage = new uv_any_handle();
  H* handle = reinterpret_cast<H*>(storage);
  handle->data = owner;
  return handle;
}

// For a handle whose uv_*_init failed: libuv never saw it, so it is freed directly.
template <typename H>
void delete_unopened_handle(H* handle) {
  delete reinterpret_cast<uv_any_handle*>(handle);
}

template <typename H>
void close_handle(H*& handle) {
  if (!handle) return;
  auto* base = reinterpret_cast<uv_handle_t*>(handle);
  base->data = nullptr;
  if (!uv_is_closing(base)) {
    uv_close(base, [](uv_handle_t* h) { delete reinterpret_cast<uv_any_handle*>(h); });
  }
  handle = nullptr;
}

}  // namespace lockroom
