// FdFlags: the file status flags (O_NONBLOCK, O_APPEND, ...) of some descriptors, saved and put
// back. libuv's uv_tty_init makes a terminal non-blocking (it reopens the tty and dup2s it over
// the descriptor) and leaves it so after the handle closes; `lockroom run` saves stdin's, stdout's
// and stderr's flags before it opens them with libuv and restores them when it is done, so the
// review's questions, and whatever the shell runs next, read a blocking terminal again.
// Header only; CLI thread.
#pragma once

#include <fcntl.h>

#include <initializer_list>
#include <utility>
#include <vector>

namespace lockroom::cli {

class FdFlags {
 public:
  // Replaces what was saved: each descriptor's flags now (descriptors that are not open are skipped).
  void save(std::initializer_list<int> fds) {
    saved_.clear();
    for (int fd : fds)
      if (int flags = ::fcntl(fd, F_GETFL); flags >= 0) saved_.emplace_back(fd, flags);
  }
  // Puts the saved flags back; may be called any number of times.
  void restore() const {
    for (const auto& [fd, flags] : saved_) ::fcntl(fd, F_SETFL, flags);
  }

 private:
  std::vector<std::pair<int, int>> saved_;
};

}  // namespace lockroom::cli
