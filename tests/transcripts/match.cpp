// Matching expected messages; see match.h.
#include "match.h"

namespace transcript {

namespace {

using json = nlohmann::json;

constexpr std::string_view kAny = "{{any}}";
constexpr std::string_view kContains = "{{contains:";

std::string show(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  return text.size() > 200 ? text.substr(0, 197) + "..." : text;
}

// Integers compare with integers (signed or not), floats with floats: 1 and 1.0 differ.
bool same_kind(const json& a, const json& b) {
  if (a.is_number_integer() && b.is_number_integer()) return true;
  return a.type() == b.type();
}

std::string differ(const std::string& at, const json& expected, const json& actual) {
  return "at " + (at.empty() ? std::string("/") : at) + ": expected " + show(expected) + ", got " + show(actual);
}

std::string compare(const std::string& at, const json& expected, const json& actual) {
  if (expected.is_string()) {
    const auto& pattern = expected.get_ref<const std::string&>();
    if (pattern == kAny) return {};
    if (pattern.size() >= kContains.size() + 2 && pattern.compare(0, kContains.size(), kContains) == 0 &&
        pattern.compare(pattern.size() - 2, 2, "}}") == 0) {
      std::string needle = pattern.substr(kContains.size(), pattern.size() - kContains.size() - 2);
      if (actual.is_string() && actual.get_ref<const std::string&>().find(needle) != std::string::npos) return {};
      return "at " + (at.empty() ? std::string("/") : at) + ": expected a string containing " + show(json(needle)) +
             ", got " + show(actual);
    }
  }
  if (!same_kind(expected, actual)) return differ(at, expected, actual);
  if (expected.is_object()) {
    for (const auto& [key, value] : expected.items()) {
      auto it = actual.find(key);
      if (it == actual.end()) return "at " + at + "/" + key + ": expected " + show(value) + ", but the member is missing";
      if (std::string why = compare(at + "/" + key, value, *it); !why.empty()) return why;
    }
    for (const auto& [key, value] : actual.items())
      if (!expected.contains(key)) return "at " + at + "/" + key + ": unexpected member with value " + show(value);
    return {};
  }
  if (expected.is_array()) {
    if (expected.size() != actual.size())
      return "at " + (at.empty() ? std::string("/") : at) + ": expected " + std::to_string(expected.size()) +
             " items, got " + std::to_string(actual.size());
    for (std::size_t i = 0; i < expected.size(); ++i)
      if (std::string why = compare(at + "/" + std::to_string(i), expected[i], actual[i]); !why.empty()) return why;
    return {};
  }
  return expected == actual ? std::string() : differ(at, expected, actual);
}

}  // namespace

std::string mismatch(const nlohmann::json& expected, const nlohmann::json& actual) { return compare("", expected, actual); }

}  // namespace transcript
