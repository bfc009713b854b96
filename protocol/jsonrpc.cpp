// JSON-RPC 2.0 classification and encoding; see jsonrpc.h.
#include "protocol/jsonrpc.h"

#include <charconv>
#include <climits>
#include <cstring>

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

// FastReader: the common case of json::parse(), at about 60% of its cost (the benchmark's request,
// parsed and freed: 25,000 instructions against 42,000; nlohmann's lexer spends ~60 per byte,
// keeping every byte twice for its error messages). Requests are read on every round trip, so
// this reader goes first. It accepts only what it fully handles:
// objects, arrays, true/false/null, integers that fit 64 bits, and strings of well-formed UTF-8
// with the two-character escapes. Anything else (\u escapes, fractions and exponents, overflowing
// integers, invalid input of every kind, nesting deeper than kMaxDepth) makes it give up, and
// json::parse() reads the text from the start, so values and error messages are always
// json::parse()'s own. Tests compare the two on mutated inputs (test_dispatcher_params.cpp).
class FastReader {
 public:
  static constexpr int kMaxDepth = 128;

  explicit FastReader(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  // True when the whole text is one JSON value of the kinds this reader handles; `out` is then
  // that value exactly as json::parse() builds it (same types: unsigned for non-negative
  // integers, the last of duplicate keys). False means "ask json::parse()", not "invalid".
  bool read_document(json& out) {
    skip_ws();
    if (!read_value(out, 0)) return false;
    skip_ws();
    return p_ == end_;
  }

 private:
  void skip_ws() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  bool literal(std::string_view word) {
    if (static_cast<std::size_t>(end_ - p_) < word.size() || std::memcmp(p_, word.data(), word.size()) != 0) return false;
    p_ += word.size();
    return true;
  }

  bool read_value(json& out, int depth) {
    if (p_ == end_) return false;
    switch (*p_) {
      case '{': return read_object(out, depth + 1);
      case '[': return read_array(out, depth + 1);
      case '"': {
        std::string s;
        if (!read_string(s)) return false;
        out = std::move(s);
        return true;
      }
      case 't':
        out = true;
        return literal("true");
      case 'f':
        out = false;
        return literal("false");
      case 'n':
        out = nullptr;
        return literal("null");
      default: return read_number(out);
    }
  }

  bool read_object(json& out, int depth) {
    if (depth > kMaxDepth) return false;
    ++p_;  // '{'
    out = json::object();
    auto& object = out.get_ref<json::object_t&>();
    skip_ws();
    if (p_ != end_ && *p_ == '}') {
      ++p_;
      return true;
    }
    for (;;) {
      if (p_ == end_ || *p_ != '"') return false;
      std::string key;
      if (!read_string(key)) return false;
      skip_ws();
      if (p_ == end_ || *p_ != ':') return false;
      ++p_;
      skip_ws();
      json value;
      if (!read_value(value, depth)) return false;
      object.insert_or_assign(std::move(key), std::move(value));  // the last duplicate wins, as in json::parse()
      skip_ws();
      if (p_ == end_) return false;
      if (*p_ == ',') {
        ++p_;
        skip_ws();
        continue;
      }
      if (*p_ == '}') {
        ++p_;
        return true;
      }
      return false;
    }
  }

  bool read_array(json& out, int depth) {
    if (depth > kMaxDepth) return false;
    ++p_;  // '['
    out = json::array();
    auto& array = out.get_ref<json::array_t&>();
    skip_ws();
    if (p_ != end_ && *p_ == ']') {
      ++p_;
      return true;
    }
    for (;;) {
      array.emplace_back();
      if (!read_value(array.back(), depth)) return false;
      skip_ws();
      if (p_ == end_) return false;
      if (*p_ == ',') {
        ++p_;
        skip_ws();
        continue;
      }
      if (*p_ == ']') {
        ++p_;
        return true;
      }
      return false;
    }
  }

  // A string of printable ASCII and well-formed UTF-8 with the simple escapes; anything else
  // (control characters, \u escapes, malformed UTF-8) is left to json::parse().
  bool read_string(std::string& out) {
    ++p_;  // opening quote
    const char* run = p_;
    for (;;) {
      if (p_ == end_) return false;
      unsigned char c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        out.append(run, p_);
        ++p_;
        return true;
      }
      if (c == '\\') {
        out.append(run, p_);
        if (++p_ == end_) return false;
        switch (*p_) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case '/': out += '/'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
          default: return false;  // \u and invalid escapes
        }
        run = ++p_;
        continue;
      }
      if (c < 0x20) return false;
      if (c < 0x80) {
        ++p_;
        continue;
      }
      std::size_t n = utf8_sequence(reinterpret_cast<const unsigned char*>(p_), static_cast<std::size_t>(end_ - p_));
      if (n == 0) return false;
      p_ += n;
    }
  }

  // Length of the well-formed UTF-8 sequence at `s` (RFC 3629: no overlongs, no surrogates, at
  // most U+10FFFF), or 0.
  static std::size_t utf8_sequence(const unsigned char* s, std::size_t left) {
    auto cont = [&](std::size_t i, unsigned char lo = 0x80, unsigned char hi = 0xBF) { return i < left && s[i] >= lo && s[i] <= hi; };
    unsigned char c = s[0];
    if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
    if (c == 0xE0) return cont(1, 0xA0, 0xBF) && cont(2) ? 3 : 0;
    if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return cont(1) && cont(2) ? 3 : 0;
    if (c == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
    if (c == 0xF0) return cont(1, 0x90, 0xBF) && cont(2) && cont(3) ? 4 : 0;
    if (c >= 0xF1 && c <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
    if (c == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
    return 0;
  }

  // Integers only: -?(0|[1-9][0-9]*) within int64 (negative) or uint64 (otherwise), stored as
  // json::parse() stores them. Fractions, exponents and overflowing integers are left to it.
  bool read_number(json& out) {
    const char* start = p_;
    bool negative = false;
    if (*p_ == '-') {
      negative = true;
      ++p_;
    }
    if (p_ == end_ || *p_ < '0' || *p_ > '9') return false;
    if (*p_ == '0') {
      ++p_;
    } else {
      while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    }
    if (p_ != end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E' || (*p_ >= '0' && *p_ <= '9'))) return false;
    if (negative) {
      std::int64_t v = 0;
      auto [end, ec] = std::from_chars(start, p_, v);
      if (ec != std::errc() || end != p_) return false;
      out = v;
    } else {
      std::uint64_t v = 0;
      auto [end, ec] = std::from_chars(start, p_, v);
      if (ec != std::errc() || end != p_) return false;
      out = v;
    }
    return true;
  }

  const char* p_;
  const char* end_;
};

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
    if (!FastReader(text).read_document(msg)) msg = json::parse(text);
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

}  // namespace lockroom::protocol
