// JSON-RPC 2.0 classification and encoding; see jsonrpc.h.
#include "protocol/jsonrpc.h"

#include <climits>

#include "protocol/fast_json_reader.h"

namespace lockroom::protocol {

json id_to_json(const Id& id) {
  if (const auto* n = std::get_if<std::int64_t>(&id)) return *n;
  return std::get<std::string>(id);
}

std::string id_to_string(const Id& id) {
  if (const auto* n = std::get_if<std::int64_t>(&id)) return std::to_string(*n);
  return dump(json(std::get<std::string>(id)));
}

std::optional<Id> read_id(const json& value) {
  if (value.is_number_unsigned()) {
    // Beyond int64 an id could not be echoed back exactly: refuse it rather than wrap it.
    if (value.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
    return Id{static_cast<std::int64_t>(value.get<std::uint64_t>())};
  }
  if (value.is_number_integer()) return Id{value.get<std::int64_t>()};
  if (value.is_string()) return Id{value.get<std::string>()};
  return std::nullopt;  // floats (even 1.0), objects, arrays, booleans
}

namespace {

InvalidMessage invalid(std::optional<Id> id, std::string message) {
  return InvalidMessage{std::move(id), RpcError{rpc_error::kInvalidRequest, std::move(message), nullptr}};
}

// A malformed reply to one of our calls: never answered (the peer would take the answer for a
// reply to its own request with that id); the dispatcher fails the call instead.
InvalidMessage invalid_response(std::optional<Id> id, std::string message) {
  InvalidMessage m = invalid(std::move(id), std::move(message));
  m.is_response = true;
  return m;
}

Message classify_object(json&& msg) {
  std::optional<Id> id;
  bool has_id = msg.contains("id");
  if (has_id && !msg["id"].is_null()) {
    id = read_id(msg["id"]);
    if (!id) return invalid(std::nullopt, "invalid request: \"id\" must be an integer or a string, got " + dump(msg["id"]));
  }

  auto version = msg.find("jsonrpc");
  if (version == msg.end() || !version->is_string() || version->get_ref<const std::string&>() != "2.0")
    return invalid(id, "invalid request: \"jsonrpc\" must be \"2.0\"");

  auto method = msg.find("method");
  if (method != msg.end()) {
    if (!method->is_string()) return invalid(id, "invalid request: \"method\" must be a string");
    json params = nullptr;
    if (auto p = msg.find("params"); p != msg.end()) {
      if (!p->is_object() && !p->is_array() && !p->is_null())
        return invalid(id, "invalid request: \"params\" must be an object or an array");
      params = std::move(*p);
    }
    if (!has_id) return Notification{method->get<std::string>(), std::move(params)};
    if (!id) return invalid(std::nullopt, "invalid request: \"id\" must not be null in a request");
    return Request{*id, method->get<std::string>(), std::move(params)};
  }

  // No method: a response to one of our calls.
  bool has_result = msg.contains("result");
  bool has_error = msg.contains("error");
  if (!has_result && !has_error) return invalid(id, "invalid request: a message needs \"method\", \"result\" or \"error\"");
  if (has_result && has_error) return invalid_response(id, "invalid response: it carries both \"result\" and \"error\"");
  if (!id) return invalid_response(std::nullopt, "invalid response: it has no usable \"id\"");
  Response response{*id, std::nullopt, std::nullopt};
  if (has_result) {
    response.result = std::move(msg["result"]);
  } else {
    const json& e = msg["error"];
    if (!e.is_object() || !e.contains("code") || !e["code"].is_number_integer())
      return invalid_response(id, "invalid response: \"error\" must be an object with an integer \"code\"");
    RpcError error{e["code"].get<int>(), "", nullptr};
    if (auto m = e.find("message"); m != e.end() && m->is_string()) error.message = m->get<std::string>();
    if (auto d = e.find("data"); d != e.end()) error.data = *d;
    response.error = std::move(error);
  }
  return response;
}

}  // namespace

Message classify(std::string_view text) {
  json msg;
  try {
    if (!read_json_fast(text, msg)) msg = json::parse(text);
  } catch (const json::exception& e) {  // parse errors, and numbers beyond a double (out_of_range)
    // nlohmann's text names the position and the cause (including invalid UTF-8).
    return InvalidMessage{std::nullopt, RpcError{rpc_error::kParseError, std::string("parse error: ") + e.what(), nullptr}};
  }
  if (msg.is_array())
    return invalid(std::nullopt, "invalid request: batch messages are not supported; send one message per frame");
  if (!msg.is_object()) return invalid(std::nullopt, "invalid request: a message must be a JSON object");
  return classify_object(std::move(msg));
}

std::string dump(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

namespace {

// Appends `value` serialised compactly to `out`, with dump()'s handling of invalid UTF-8. This is
// what json::dump() does, minus its temporary string: replies are written into one buffer.
void append_dump(std::string& out, const json& value) {
  nlohmann::detail::serializer<json> writer(nlohmann::detail::output_adapter<char>(out), ' ', json::error_handler_t::replace);
  writer.dump(value, false, false, 0);
}

void append_id(std::string& out, const Id& id) {
  if (const auto* n = std::get_if<std::int64_t>(&id)) {
    out += std::to_string(*n);
  } else {
    append_dump(out, json(std::get<std::string>(id)));
  }
}

// Room for a typical message, so appending the payload rarely reallocates.
constexpr std::size_t kTypicalMessageBytes = 512;

}  // namespace

// The envelope is written as text; only the id and the payload go through the serialiser, into
// the same buffer, so a result is neither copied into a temporary JSON tree nor into a second string.
std::string encode_result(const Id& id, const json& result) {
  std::string out;
  out.reserve(kTypicalMessageBytes);
  out += "{\"jsonrpc\":\"2.0\",\"id\":";
  append_id(out, id);
  out += ",\"result\":";
  append_dump(out, result);
  out += '}';
  return out;
}

std::string encode_error(const std::optional<Id>& id, const RpcError& error) {
  std::string out;
  out.reserve(kTypicalMessageBytes);
  out += "{\"jsonrpc\":\"2.0\",\"id\":";
  if (id) {
    append_id(out, *id);
  } else {
    out += "null";
  }
  out += ",\"error\":{\"code\":";
  out += std::to_string(error.code);
  out += ",\"message\":";
  append_dump(out, json(error.message));
  if (!error.data.is_null()) {
    out += ",\"data\":";
    append_dump(out, error.data);
  }
  out += "}}";
  return out;
}

namespace {
// `,"method":M[,"params":P]}` — the tail requests and notifications share.
void append_call(std::string& out, std::string_view method, const json& params) {
  out += "\"method\":";
  append_dump(out, json(method));
  if (!params.is_null()) {
    out += ",\"params\":";
    append_dump(out, params);
  }
  out += '}';
}
}  // namespace

std::string encode_request(const Id& id, std::string_view method, const json& params) {
  std::string out;
  out.reserve(kTypicalMessageBytes);
  out += "{\"jsonrpc\":\"2.0\",\"id\":";
  append_id(out, id);
  out += ',';
  append_call(out, method, params);
  return out;
}

std::string encode_notification(std::string_view method, const json& params) {
  std::string out;
  out.reserve(kTypicalMessageBytes);
  out += "{\"jsonrpc\":\"2.0\",";
  append_call(out, method, params);
  return out;
}

RpcError request_failed(std::string_view kind, std::string message) {
  return RpcError{rpc_error::kRequestFailed, std::move(message), json{{"kind", std::string(kind)}}};
}

}  // namespace lockroom::protocol
