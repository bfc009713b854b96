// SignalWatch: runs a callback on the loop thread when SIGTERM, SIGINT or SIGHUP arrives, so a
// process that serves a peer on stdio (`serve`, `acp`) can end its sandboxes before it exits.
// Loop thread only.
#pragma once

#include <csignal>
#include <functional>
#include <vector>

#include <uv.h>

#include "server/common/uv_handle.h"

namespace lockroom {

class SignalWatch {
 public:
  SignalWatch(uv_loop_t* loop, std::function<void(int)> on_signal) : on_signal_(std::move(on_signal)) {
    for (int signum : {SIGTERM, SIGINT, SIGHUP}) {
      auto* handle = new_handle<uv_signal_t>(this);
      uv_signal_init(loop, handle);
      uv_signal_start(handle, [](uv_signal_t* h, int signum) {
        if (auto* self = static_cast<SignalWatch*>(h->data)) self->on_signal_(signum);
      }, signum);
      handles_.push_back(handle);
    }
  }
  ~SignalWatch() { close(); }
  SignalWatch(const SignalWatch&) = delete;
  SignalWatch& operator=(const SignalWatch&) = delete;
  void close() {
    for (auto*& h : handles_) close_handle(h);
    handles_.clear();
  }

 private:
  std::function<void(int)> on_signal_;
  std::vector<uv_signal_t*> handles_;
};

}  // namespace lockroom
