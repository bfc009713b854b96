// Helper of the control socket tests: running a blocking client on a thread while the test
// thread turns the server's loop.
#pragma once

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>

#include <uv.h>

#include "tests/support/temp_dir.h"

namespace lockroom::testing {

// Runs `client` (blocking calls, no test assertions inside) on a thread and the loop here until
// it returns; gives back what it returned.
template <typename F>
auto while_looping(uv_loop_t* loop, F client) -> decltype(client()) {
  std::optional<decltype(client())> result;
  std::atomic<bool> done{false};
  std::thread thread([&] {
    result.emplace(client());
    done = true;
  });
  while (!done) {
    uv_run(loop, UV_RUN_NOWAIT);
    std::this_thread::sleep_for(std::chrono::microseconds(300));
  }
  thread.join();
  return std::move(*result);
}

}  // namespace lockroom::testing
