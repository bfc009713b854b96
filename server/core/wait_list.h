// WaitList<T>: callers waiting for one shared asynchronous result (an image, a template).
//
// The first caller starts the work; later callers join; finish() answers all of them, in
// order, with the same result. Loop thread only.
#pragma once

#include <functional>
#include <vector>

#include "server/common/result.h"

namespace lockroom::core {

template <typename T>
class WaitList {
 public:
  using Callback = std::function<void(Result<T>)>;
  // True when this caller is the first and must start the work.
  bool join(Callback fn) {
    callbacks_.push_back(std::move(fn));
    return callbacks_.size() == 1;
  }
  void finish(const Result<T>& result) {
    auto callbacks = std::move(callbacks_);
    callbacks_.clear();
    for (auto& fn : callbacks) fn(result);
  }

 private:
  std::vector<Callback> callbacks_;
};

}  // namespace lockroom::core
