// write_all: every byte of `bytes` to `fd`, through short writes and EINTR. False when a write
// fails (errno says why; EIO for a write that wrote nothing). Header-only.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <string_view>

namespace lockroom::agent {

inline bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace lockroom::agent
