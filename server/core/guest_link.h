// GuestLink: lockroom's live connection to one guest's agent — socket, channel and typed client.
//
// connect() dials QEMU's channel socket (retrying until QEMU has made it, within a deadline),
// says hello over a GuestChannel, and hands back the link with its AgentClient ready to use.
// A link that fails after that reports once through on_failed. close() is asynchronous; the
// link must stay alive until its `done` runs (the manager keeps closing links until then).
// Loop thread only.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>

#include <uv.h>

#include "server/channel/agent_client.h"
#include "server/channel/guest_channel.h"
#include "server/common/result.h"

namespace lockroom::core {

class GuestLink {
 public:
  using Connected = std::function<void(Result<std::unique_ptr<GuestLink>>)>;

  // `on_failed` runs at most once, if the channel fails after connect() reported success.
  static void connect(uv_loop_t* loop, std::filesystem::path socket, std::chrono::milliseconds deadline,
                      std::function<void(const Error&)> on_failed, Connected done);
  ~GuestLink();
  GuestLink(const GuestLink&) = delete;
  GuestLink& operator=(const GuestLink&) = delete;

  channel::AgentClient& agent() { return *agent_; }
  channel::GuestChannel& channel() { return *channel_; }
  void close(std::function<void()> done);

 private:
  GuestLink(uv_loop_t* loop, channel::ChannelOptions options);
  std::unique_ptr<channel::GuestChannel> channel_;
  std::unique_ptr<channel::AgentClient> agent_;
};

// Keeps closing things alive until their close has finished, then frees them.
template <typename T>
void close_and_release(std::unique_ptr<T> owned, std::function<void()> then = {}) {
  if (!owned) {
    if (then) then();
    return;
  }
  T* raw = owned.release();
  raw->close([raw, then = std::move(then)] {
    delete raw;
    if (then) then();
  });
}

}  // namespace lockroom::core
