// ParamReader; see params.h.
#include "protocol/params.h"

#include <algorithm>

#include "protocol/nearest_name.h"

namespace lockroom::protocol {

namespace {
const json& empty_object() {
  static const json kEmpty = json::object();
  return kEmpty;
}

std::string describe(const json& value) {
  std::string text = dump(value);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

// A field name as it may be quoted in a message: at most 60 bytes, control characters as '?'.
std::string printable(const std::string& name) {
  std::string out;
  for (char c : name.substr(0, 60)) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  if (name.size() > 60) out += "...";
  return out;
}

bool always_allowed(const std::string& key) { return key == "workDoneToken" || key == "partialResultToken"; }
}  // namespace

RpcError invalid_params(const std::string& field, const std::string& problem) {
  std::string subject = field.empty() ? std::string("params") : "\"" + field + "\"";
  return RpcError{rpc_error::kInvalidParams, "invalid params: " + subject + " " + problem, json{{"field", field}}};
}

std::string ParamReader::nearest(const std::string& name, const std::vector<std::string>& known) {
  return nearest_name(name, known);
}

std::optional<ParamReader::Unknown> ParamReader::first_unknown(std::initializer_list<const char*> read_elsewhere) const {
  std::vector<std::string> known = asked_;
  for (const char* field : read_elsewhere)
    if (std::find(known.begin(), known.end(), field) == known.end()) known.emplace_back(field);
  for (const auto& [key, value] : object_->items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    if (prefix_.empty() && always_allowed(key)) continue;
    std::string problem = "is not a known field";
    if (std::string close = nearest(key, known); !close.empty()) {
      problem += "; did you mean \"" + path(close.c_str()) + "\"?";
    } else if (!known.empty()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      problem += " (known: " + list + ")";
    }
    return Unknown{prefix_ + printable(key), std::move(problem)};
  }
  return nested_unknown_;
}

void ParamReader::reject_unknown(std::initializer_list<const char*> read_elsewhere) {
  if (error_) return;
  if (auto unknown = first_unknown(read_elsewhere)) error_ = invalid_params(unknown->field, unknown->problem);
}

ParamReader::ParamReader(const json& params, std::string prefix) : prefix_(std::move(prefix)) {
  if (params.is_null()) {
    object_ = &empty_object();
  } else if (params.is_object()) {
    object_ = &params;
  } else {
    object_ = &empty_object();
    error_ = invalid_params(prefix_.empty() ? "" : prefix_.substr(0, prefix_.size() - 1), "must be an object, got " + describe(params));
  }
}

const json* ParamReader::find(const char* field, bool required) {
  if (std::find(asked_.begin(), asked_.end(), field) == asked_.end()) asked_.emplace_back(field);
  auto it = object_->find(field);
  if (it == object_->end() || it->is_null()) {
    if (required) fail(field, "is required");
    return nullptr;
  }
  return &*it;
}

void ParamReader::fail(const char* field, const std::string& problem) {
  if (error_) return;  // the first problem is the one reported
  error_ = invalid_params(path(field), problem);
}

void ParamReader::type_error(const char* field, const char* expected, const json& got) {
  fail(field, std::string("must be ") + expected + ", got " + describe(got));
}

std::optional<std::string> ParamReader::string(const char* field, bool required) {
  const json* v = find(field, required);
  if (!v) return std::nullopt;
  if (!v->is_string()) return type_error(field, "a string", *v), std::nullopt;
  return v->get<std::string>();
}

std::optional<std::int64_t> ParamReader::integer(const char* field, bool required, std::int64_t min, std::int64_t max) {
  const json* v = find(field, required);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) return type_error(field, "an integer", *v), std::nullopt;
  if (v->is_number_unsigned() && v->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
    fail(field, "is out of range (at most " + std::to_string(max) + ")");
    return std::nullopt;
  }
  std::int64_t n = v->get<std::int64_t>();
  if (n < min || n > max) {
    fail(field, "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " + std::to_string(n));
    return std::nullopt;
  }
  return n;
}

std::optional<bool> ParamReader::boolean(const char* field, bool required) {
  const json* v = find(field, required);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) return type_error(field, "true or false", *v), std::nullopt;
  return v->get<bool>();
}

std::optional<std::vector<std::string>> ParamReader::strings(const char* field, bool required) {
  const json* v = find(field, required);
  if (!v) return std::nullopt;
  if (!v->is_array()) return type_error(field, "an array of strings", *v), std::nullopt;
  std::vector<std::string> out;
  out.reserve(v->size());
  for (std::size_t i = 0; i < v->size(); ++i) {
    const json& item = (*v)[i];
    if (!item.is_string()) {
      fail(field, "must be an array of strings, but item " + std::to_string(i) + " is " + describe(item));
      return std::nullopt;
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

std::optional<std::map<std::string, std::string>> ParamReader::string_map(const char* field, bool required) {
  const json* v = find(field, required);
  if (!v) return std::nullopt;
  if (!v->is_object()) return type_error(field, "an object of strings", *v), std::nullopt;
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : v->items()) {
    if (!value.is_string()) {
      fail(field, "must map names to strings, but \"" + key + "\" is " + describe(value));
      return std::nullopt;
    }
    out.emplace(key, value.get<std::string>());
  }
  return out;
}

std::optional<json> ParamReader::any(const char* field, bool required) {
  const json* v = find(field, required);
  if (!v) return std::nullopt;
  return *v;
}

std::optional<ParamReader> ParamReader::object(const char* field, bool required) {
  const json* v = find(field, required);
  if (!v) return std::nullopt;
  if (!v->is_object()) return type_error(field, "an object", *v), std::nullopt;
  return ParamReader(*v, path(field) + ".");
}

void ParamReader::merge(const ParamReader& nested) {
  if (!error_ && nested.error_) error_ = nested.error_;
  if (!nested_unknown_) nested_unknown_ = nested.first_unknown({});
}

}  // namespace lockroom::protocol
