// Comparing a message from the server with the one a transcript expects.
//
// Equality is exact and type-aware (object key order aside), with two wildcards in the expected
// value: the string "{{any}}" matches any value, and "{{contains:TEXT}}" matches any string
// that contains TEXT. Pure; used only by the runner.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace transcript {

// Empty when `actual` matches `expected`; otherwise where and how they first differ, e.g.
//   at /error/code: expected -32600, got -32700
std::string mismatch(const nlohmann::json& expected, const nlohmann::json& actual);

}  // namespace transcript
