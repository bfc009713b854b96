// PollSet: the descriptors one turn of the agent's poll() loop waits on, each with its handler.
// Rebuilt every turn from the current state (the agent has few descriptors), so interest always
// matches what can make progress: output is read only while the host has granted credit.
#pragma once

#include <poll.h>

#include <functional>
#include <vector>

namespace lockroom::agent {

struct PollSet {
  std::vector<pollfd> fds;
  std::vector<std::function<void(short revents)>> handlers;

  void add(int fd, short events, std::function<void(short)> handler) {
    fds.push_back(pollfd{fd, events, 0});
    handlers.push_back(std::move(handler));
  }
  void clear() {
    fds.clear();
    handlers.clear();
  }
};

}  // namespace lockroom::agent
