// identical(): two JSON values equal in value and in type all the way down. json's operator==
// takes 1 and 1u, or 1 and 1.0, for the same; the tests that compare lockroom's fast JSON reader
// with json::parse() (unit and fuzz) must not.
#pragma once

#include <nlohmann/json.hpp>

namespace lockroom::testing {

inline bool identical(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.type() != b.type()) return false;
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib)
      if (ia.key() != ib.key() || !identical(ia.value(), ib.value())) return false;
    return true;
  }
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!identical(a[i], b[i])) return false;
    return true;
  }
  return a == b;
}

}  // namespace lockroom::testing
