// A small JSON Schema validator for the tests that keep protocol/schema/ true.
//
// It checks the subset of JSON Schema (2020-12) that lockroom's schema uses, and refuses a
// schema that uses anything else, so a keyword it does not know can never pass silently:
//   type (one or a list), enum, const, properties, required, additionalProperties (true, false
//   or a schema), items, minItems, maxItems, minimum, maximum, minLength, maxLength, pattern
//   (ECMAScript syntax, std::regex), oneOf, anyOf, allOf, $ref ("#/$defs/Name"), and the
//   annotations $schema, $id, $comment, title, description, examples, default, deprecated and
//   x-* (ignored).
// Errors name the instance path (`params.resources.memoryMiB`) and what was wrong. Test-only,
// header-only.
#pragma once

#include <regex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockroom::testing {

class JsonSchema {
 public:
  using json = nlohmann::json;

  // `root` is a whole schema document whose `$defs` hold the named schemas.
  explicit JsonSchema(json root);

  // Problems with the schema itself: unknown keywords, $refs that resolve to nothing.
  std::vector<std::string> check_schema() const;

  // Validates `value` against `#/$defs/<name>`; returns the problems found (empty: valid).
  // `where` names the value in messages (e.g. "sandbox/create params").
  std::vector<std::string> validate(const std::string& def_name, const json& value, const std::string& where) const;
  bool has_def(const std::string& name) const;

  const json& root() const { return root_; }

 private:
  void check(const json& schema, const json& value, const std::string& path, std::vector<std::string>& errors,
             int depth) const;
  const json* resolve(const std::string& ref) const;
  void check_keywords(const json& schema, const std::string& where, std::vector<std::string>& problems) const;

  json root_;
};


inline JsonSchema::JsonSchema(json root) : root_(std::move(root)) {}

inline bool JsonSchema::has_def(const std::string& name) const {
  return root_.contains("$defs") && root_["$defs"].contains(name);
}

inline const nlohmann::json* JsonSchema::resolve(const std::string& ref) const {
  const std::string prefix = "#/$defs/";
  if (ref.rfind(prefix, 0) != 0) return nullptr;
  std::string name = ref.substr(prefix.size());
  if (!has_def(name)) return nullptr;
  return &root_["$defs"][name];
}

inline std::vector<std::string> JsonSchema::check_schema() const {
  std::vector<std::string> problems;
  if (!root_.is_object() || !root_.contains("$defs") || !root_["$defs"].is_object()) {
    problems.push_back("the schema has no $defs object");
    return problems;
  }
  for (const auto& [name, def] : root_["$defs"].items()) check_keywords(def, "$defs/" + name, problems);
  return problems;
}

inline void JsonSchema::check_keywords(const json& schema, const std::string& where, std::vector<std::string>& problems) const {
  if (schema.is_boolean()) return;
  if (!schema.is_object()) {
    problems.push_back(where + ": a schema must be an object or a boolean");
    return;
  }
  static const std::set<std::string> kKnown{
      "type", "enum", "const", "properties", "required", "additionalProperties", "items", "minItems", "maxItems",
      "minimum", "maximum", "minLength", "maxLength", "pattern", "oneOf", "anyOf", "allOf", "$ref", "$schema", "$id",
      "$comment", "title", "description", "examples", "default", "deprecated", "$defs"};
  for (const auto& [key, value] : schema.items()) {
    if (key.rfind("x-", 0) == 0) continue;
    if (!kKnown.count(key)) problems.push_back(where + ": keyword \"" + key + "\" is not one this validator checks");
  }
  if (schema.contains("$ref")) {
    if (!schema["$ref"].is_string() || !resolve(schema["$ref"].get<std::string>()))
      problems.push_back(where + ": $ref " + schema["$ref"].dump() + " resolves to nothing");
  }
  if (schema.contains("properties"))
    for (const auto& [key, sub] : schema["properties"].items()) check_keywords(sub, where + "/properties/" + key, problems);
  if (schema.contains("required") && schema.contains("properties"))
    for (const auto& name : schema["required"])
      if (!schema["properties"].contains(name.get<std::string>()))
        problems.push_back(where + ": required \"" + name.get<std::string>() + "\" is not among its properties");
  if (schema.contains("additionalProperties") && schema["additionalProperties"].is_object())
    check_keywords(schema["additionalProperties"], where + "/additionalProperties", problems);
  if (schema.contains("items")) check_keywords(schema["items"], where + "/items", problems);
  for (const char* list : {"oneOf", "anyOf", "allOf"})
    if (schema.contains(list)) {
      int i = 0;
      for (const auto& sub : schema[list]) check_keywords(sub, where + "/" + list + "/" + std::to_string(i++), problems);
    }
  if (schema.contains("pattern")) {
    try {
      std::regex re(schema["pattern"].get<std::string>(), std::regex::ECMAScript);
    } catch (const std::regex_error&) {
      problems.push_back(where + ": pattern " + schema["pattern"].dump() + " is not a valid regular expression");
    }
  }
}

inline std::vector<std::string> JsonSchema::validate(const std::string& def_name, const json& value, const std::string& where) const {
  std::vector<std::string> errors;
  const json* schema = resolve("#/$defs/" + def_name);
  if (!schema) {
    errors.push_back(where + ": the schema has no definition \"" + def_name + "\"");
    return errors;
  }
  check(*schema, value, where, errors, 0);
  return errors;
}

namespace json_schema_detail {

inline bool has_type(const nlohmann::json& value, const std::string& type) {
  if (type == "null") return value.is_null();
  if (type == "boolean") return value.is_boolean();
  if (type == "integer") return value.is_number_integer() || (value.is_number_float() && value.get<double>() == static_cast<double>(static_cast<long long>(value.get<double>())));
  if (type == "number") return value.is_number();
  if (type == "string") return value.is_string();
  if (type == "array") return value.is_array();
  if (type == "object") return value.is_object();
  return false;
}

inline std::string clip(const nlohmann::json& value) {
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return text.size() > 80 ? text.substr(0, 77) + "..." : text;
}

}  // namespace json_schema_detail

inline void JsonSchema::check(const json& schema, const json& value, const std::string& path, std::vector<std::string>& errors,
                              int depth) const {
  using namespace json_schema_detail;
  if (depth > 64) {
    errors.push_back(path + ": the schema nests deeper than 64 levels (a $ref cycle?)");
    return;
  }
  if (schema.is_boolean()) {
    if (!schema.get<bool>()) errors.push_back(path + ": no value is allowed here");
    return;
  }
  if (schema.contains("$ref")) {
    const json* target = resolve(schema["$ref"].get<std::string>());
    if (!target) errors.push_back(path + ": $ref " + schema["$ref"].dump() + " resolves to nothing");
    else check(*target, value, path, errors, depth + 1);
  }
  if (schema.contains("type")) {
    std::vector<std::string> types;
    if (schema["type"].is_string()) types.push_back(schema["type"]);
    else for (const auto& t : schema["type"]) types.push_back(t);
    bool any = false;
    for (const auto& t : types) any = any || has_type(value, t);
    if (!any) {
      errors.push_back(path + ": must be " + schema["type"].dump() + ", got " + clip(value));
      return;
    }
  }
  if (schema.contains("const") && value != schema["const"])
    errors.push_back(path + ": must be " + clip(schema["const"]) + ", got " + clip(value));
  if (schema.contains("enum")) {
    bool found = false;
    for (const auto& option : schema["enum"]) found = found || option == value;
    if (!found) errors.push_back(path + ": must be one of " + clip(schema["enum"]) + ", got " + clip(value));
  }
  if (value.is_number()) {
    if (schema.contains("minimum") && value.get<double>() < schema["minimum"].get<double>())
      errors.push_back(path + ": must be at least " + schema["minimum"].dump() + ", got " + value.dump());
    if (schema.contains("maximum") && value.get<double>() > schema["maximum"].get<double>())
      errors.push_back(path + ": must be at most " + schema["maximum"].dump() + ", got " + value.dump());
  }
  if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    if (schema.contains("minLength") && text.size() < schema["minLength"].get<std::size_t>())
      errors.push_back(path + ": must have at least " + schema["minLength"].dump() + " characters, got " + clip(value));
    if (schema.contains("maxLength") && text.size() > schema["maxLength"].get<std::size_t>())
      errors.push_back(path + ": must have at most " + schema["maxLength"].dump() + " characters");
    if (schema.contains("pattern") && !std::regex_search(text, std::regex(schema["pattern"].get<std::string>(), std::regex::ECMAScript)))
      errors.push_back(path + ": " + clip(value) + " does not match " + schema["pattern"].dump());
  }
  if (value.is_array()) {
    if (schema.contains("minItems") && value.size() < schema["minItems"].get<std::size_t>())
      errors.push_back(path + ": must have at least " + schema["minItems"].dump() + " items");
    if (schema.contains("maxItems") && value.size() > schema["maxItems"].get<std::size_t>())
      errors.push_back(path + ": must have at most " + schema["maxItems"].dump() + " items");
    if (schema.contains("items"))
      for (std::size_t i = 0; i < value.size(); ++i) check(schema["items"], value[i], path + "[" + std::to_string(i) + "]", errors, depth + 1);
  }
  if (value.is_object()) {
    if (schema.contains("required"))
      for (const auto& name : schema["required"])
        if (!value.contains(name.get<std::string>())) errors.push_back(path + ": lacks the required field \"" + name.get<std::string>() + "\"");
    for (const auto& [key, member] : value.items()) {
      std::string at = path + "." + key;
      if (schema.contains("properties") && schema["properties"].contains(key)) {
        check(schema["properties"][key], member, at, errors, depth + 1);
      } else if (schema.contains("additionalProperties")) {
        check(schema["additionalProperties"], member, at, errors, depth + 1);
      }
    }
  }
  if (schema.contains("allOf"))
    for (const auto& sub : schema["allOf"]) check(sub, value, path, errors, depth + 1);
  for (const char* list : {"oneOf", "anyOf"}) {
    if (!schema.contains(list)) continue;
    int matches = 0;
    std::vector<std::string> first_errors;
    for (const auto& sub : schema[list]) {
      std::vector<std::string> sub_errors;
      check(sub, value, path, sub_errors, depth + 1);
      if (sub_errors.empty()) ++matches;
      else if (first_errors.empty()) first_errors = std::move(sub_errors);
    }
    bool one = std::string(list) == "oneOf";
    if (matches == 0) {
      errors.push_back(path + ": matches none of the " + std::string(list) + " alternatives (the first says: " +
                       (first_errors.empty() ? std::string("?") : first_errors.front()) + ")");
    } else if (one && matches > 1) {
      errors.push_back(path + ": matches " + std::to_string(matches) + " of the oneOf alternatives, not exactly one");
    }
  }
}

}  // namespace lockroom::testing
