// Field-naming JSON helpers; see json_fields.h.
#include "server/egress/policy/json_fields.h"

#include "protocol/nearest_name.h"

namespace lockroom::egress {

std::string describe_json(const json& value) {
  std::string text = value.dump(-1, ' ', true, json::error_handler_t::replace);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

std::string json_type_name(const json& value) {
  if (value.is_number_integer() || value.is_number_unsigned()) return "integer";
  return value.type_name();
}

Error field_error(const std::string& path, const std::string& problem) {
  return make_field_error(path, path + ": " + problem);
}

Error type_error(const std::string& path, const char* expected, const json& got) {
  return field_error(path, std::string("must be ") + expected + ", got " + json_type_name(got) + " " + describe_json(got));
}

Result<void> reject_unknown_fields(const json& object, std::initializer_list<const char*> known, const std::string& path) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    bool found = false;
    for (const char* name : known) found = found || it.key() == name;
    if (!found) {
      std::string list;
      for (const char* name : known) list += (list.empty() ? "" : ", ") + std::string(name);
      std::string key;
      for (char c : it.key().substr(0, 40)) key += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
      std::string close = protocol::nearest_name(it.key(), known);
      if (!close.empty()) return field_error(path + "." + key, "is not a known field; did you mean \"" + path + "." + close + "\"?");
      return field_error(path + "." + key, "is not a known field (known: " + list + ")");
    }
  }
  return {};
}

}  // namespace lockroom::egress
