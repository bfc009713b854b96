// delta_between: the delta (protocol/channel.md, "Inline content") that makes `now` from `base`:
// the longest common prefix, then the longest common suffix of what is left (the two never
// overlap). Header-only: the agent's and the tests' builds take it without a source list.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "protocol/channel/messages.h"

namespace lockroom::agent {

namespace inline_delta_detail {

// Eight bytes at a time (under TCG a byte loop over a review's 1.4 MB costs milliseconds).
inline std::uint64_t word_at(const char* p) {
  std::uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

inline std::size_t common_prefix(const char* a, const char* b, std::size_t most) {
  std::size_t n = 0;
  while (n + 8 <= most && word_at(a + n) == word_at(b + n)) n += 8;
  while (n < most && a[n] == b[n]) ++n;
  return n;
}

// How many of the bytes just before `a_end` and `b_end` agree, at most `most`.
inline std::size_t common_suffix(const char* a_end, const char* b_end, std::size_t most) {
  std::size_t n = 0;
  while (n + 8 <= most && word_at(a_end - n - 8) == word_at(b_end - n - 8)) n += 8;
  while (n < most && a_end[-1 - static_cast<std::ptrdiff_t>(n)] == b_end[-1 - static_cast<std::ptrdiff_t>(n)]) ++n;
  return n;
}

}  // namespace inline_delta_detail

inline protocol::channel::InlineDelta delta_between(std::string_view base, std::string_view now) {
  std::size_t most = std::min(base.size(), now.size());
  using namespace inline_delta_detail;
  std::size_t prefix = common_prefix(base.data(), now.data(), most);
  std::size_t suffix = common_suffix(base.data() + base.size(), now.data() + now.size(), most - prefix);
  return {static_cast<std::uint32_t>(prefix), static_cast<std::uint32_t>(suffix)};
}

}  // namespace lockroom::agent
