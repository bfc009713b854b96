// Small helpers for reading the egress JSON (policies, secrets) with errors that name the field:
//   network.rules[2].host: "exa mple.com" is not a valid host name: ...
// Used by policy_json.cpp and secrets.cpp only. Pure; no I/O.
#pragma once

#include <initializer_list>
#include <string>

#include <nlohmann/json.hpp>

#include "server/common/result.h"

namespace lockroom::egress {

using json = nlohmann::json;

// A short, printable rendering of a value for messages (cut at 60 characters).
std::string describe_json(const json& value);
std::string json_type_name(const json& value);

// kInvalidInput "`path`: `problem`", with Error::field = path (sent as data.field at the edge).
Error field_error(const std::string& path, const std::string& problem);
// "`path` must be <expected>, got <value>".
Error type_error(const std::string& path, const char* expected, const json& got);
// An error naming the first member of `object` that is not in `known`.
Result<void> reject_unknown_fields(const json& object, std::initializer_list<const char*> known, const std::string& path);

}  // namespace lockroom::egress
