// nearest_name: the known field a misspelt one most likely meant, for "did you mean" messages.
//
// Used by ParamReader (protocol/params.h) for request params and by the egress policy parser
// (server/egress/policy/json_fields.h) for policies, so both suggest alike. Header-only and pure.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lockroom::protocol {

// Levenshtein distance between `a` and `b`, ignoring ASCII case.
inline std::size_t name_distance(std::string_view a, std::string_view b) {
  auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// True when the shorter of `a` and `b` (3 characters or more) begins the longer, ignoring case:
// "cwdir" and "cwd", "timeout" and "timeoutSeconds".
inline bool name_extends(std::string_view a, std::string_view b) {
  if (a.size() > b.size()) std::swap(a, b);
  if (a.size() < 3) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

// The candidate nearest to `name`, or "" when none is close: close means an edit distance of at
// most a third of the longer name (at least 1), or one name beginning the other (name_extends),
// ignoring case. The nearest by edit distance wins; the first of equally near ones.
template <typename Names>
std::string nearest_name(std::string_view name, const Names& candidates) {
  std::string best;
  std::size_t best_distance = static_cast<std::size_t>(-1);
  if (name.size() > 200) return best;  // nobody misspells a field that long; keep the cost bounded
  for (const auto& candidate : candidates) {
    std::string_view c(candidate);
    std::size_t d = name_distance(name, c);
    std::size_t bound = std::max<std::size_t>(1, std::max(name.size(), c.size()) / 3);
    if ((d <= bound || name_extends(name, c)) && d < best_distance) best = std::string(c), best_distance = d;
  }
  return best;
}

}  // namespace lockroom::protocol
