// The host's wall clock and entropy, as a restored guest is given them (guest.resume) and as
// sandbox ids are drawn. One place, so every caller reads them the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace lockroom::core {

// `n` bytes from getrandom(); fewer only if the kernel refuses (it does not after boot).
std::string random_entropy(std::size_t n);
// CLOCK_REALTIME in nanoseconds since the Unix epoch.
std::int64_t unix_time_ns();

}  // namespace lockroom::core
