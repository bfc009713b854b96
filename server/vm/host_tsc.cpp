// host_tsc_khz; see host_tsc.h.
#include "server/vm/host_tsc.h"

#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace lockroom::vm {

namespace {

std::optional<long> measure() {
#if defined(__x86_64__)
  auto now_ns = [] {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
  };
  long long t0 = now_ns();
  unsigned long long c0 = __rdtsc();
  timespec pause{0, 20 * 1000 * 1000};
  nanosleep(&pause, nullptr);
  long long t1 = now_ns();
  unsigned long long c1 = __rdtsc();
  if (t1 <= t0 || c1 <= c0) return std::nullopt;
  long khz = static_cast<long>(static_cast<double>(c1 - c0) * 1e6 / static_cast<double>(t1 - t0));
  if (khz < 100000 || khz > 10000000) return std::nullopt;  // 0.1–10 GHz, else not trustworthy
  return khz;
#else
  return std::nullopt;
#endif
}

}  // namespace

std::optional<long> host_tsc_khz() {
  static const std::optional<long> cached = measure();
  return cached;
}

}  // namespace lockroom::vm
