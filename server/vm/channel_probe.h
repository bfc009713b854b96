// The default readiness check for a booting guest: QEMU's channel chardev socket accepts a
// connection and the guest writes its first byte on it. Retries the connect until QEMU has made
// the socket; keeps the connected pipe so the caller can hand it on. Loop thread only.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include <uv.h>

#include "server/common/result.h"

namespace lockroom::vm {

class ChannelProbe {
 public:
  // `done` gets the first bytes the guest wrote. Called once, unless the probe is destroyed first.
  ChannelProbe(uv_loop_t* loop, std::filesystem::path socket, std::function<void(Result<std::string>)> done);
  ~ChannelProbe();
  ChannelProbe(const ChannelProbe&) = delete;
  ChannelProbe& operator=(const ChannelProbe&) = delete;

  void start();
  // The connected pipe, for the channel layer; the probe no longer owns it. Null before success.
  uv_pipe_t* take_pipe();

 private:
  void attempt();
  void finish(Result<std::string> r);

  uv_loop_t* loop_;
  std::filesystem::path socket_;
  std::function<void(Result<std::string>)> done_;
  uv_pipe_t* pipe_ = nullptr;
  uv_timer_t* retry_ = nullptr;
};

}  // namespace lockroom::vm
