// host_random; see host_random.h.
#include "server/core/host_random.h"

#include <sys/random.h>
#include <time.h>

namespace lockroom::core {

std::string random_entropy(std::size_t n) {
  std::string out(n, '\0');
  std::size_t got = 0;
  while (got < n) {
    ssize_t r = getrandom(out.data() + got, n - got, 0);
    if (r <= 0) break;
    got += static_cast<std::size_t>(r);
  }
  return out;
}

std::int64_t unix_time_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

}  // namespace lockroom::core
