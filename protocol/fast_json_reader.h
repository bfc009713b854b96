// read_json_fast(): the common case of json::parse(), at about 60% of its cost, for the requests
// read on every round trip. It accepts only what it fully handles (objects, arrays,
// true/false/null, integers that fit 64 bits, strings of well-formed UTF-8 with the
// two-character escapes) and gives the same value json::parse() would; anything else — \u
// escapes, fractions and exponents, overflowing integers, invalid input of every kind, nesting
// deeper than 128 — returns false, meaning "ask json::parse()" (never "invalid"), so values and
// error messages stay json::parse()'s own. Pure.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

namespace lockroom::protocol {

// True when the whole of `text` is one JSON value this reader handles; `out` is then that value
// exactly as json::parse() builds it (unsigned for non-negative integers, the last of duplicate keys).
bool read_json_fast(std::string_view text, nlohmann::json& out);

}  // namespace lockroom::protocol
