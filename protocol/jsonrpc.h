// JSON-RPC 2.0 messages on the wire: classifying what arrives, encoding what leaves.
//
// Pure functions with no I/O, used by server/rpc for both faces (Content-Length and ndjson).
// classify() turns one frame's text into exactly one of: a request, a notification, a response
// to one of our own calls, or an invalid message (with the error reply it deserves).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

namespace lockroom::protocol {

using json = nlohmann::json;

// Error codes of JSON-RPC 2.0 and of the Language Server Protocol.
namespace rpc_error {
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
inline constexpr int kServerNotInitialized = -32002;
inline constexpr int kUnknownErrorCode = -32001;
inline constexpr int kRequestFailed = -32803;
inline constexpr int kRequestCancelled = -32800;
}  // namespace rpc_error

// A request id: JSON-RPC allows numbers and strings (null appears only in error replies).
using Id = std::variant<std::int64_t, std::string>;

json id_to_json(const Id& id);
// A readable, unambiguous rendering for logs and map keys: 7 or "abc".
std::string id_to_string(const Id& id);
// An id from JSON: an integer within int64 or a string; anything else (floats included) is not one.
std::optional<Id> read_id(const json& value);

struct RpcError {
  int code = rpc_error::kInternalError;
  std::string message;
  json data;  // null when absent
};

// `data.kind` of every -32803 (kRequestFailed): what kind of failure, for clients to act on
// without parsing the message. protocol/README.md ("Errors") says when each happens.
namespace failure_kind {
inline constexpr const char* kNotFound = "notFound";            // a named thing does not exist
inline constexpr const char* kWrongState = "wrongState";        // not allowed in the current state
inline constexpr const char* kLimitExceeded = "limitExceeded";  // a configured bound was hit
inline constexpr const char* kUnavailable = "unavailable";      // something needed is missing or gone
}  // namespace failure_kind

// A -32803 error with data {kind}.
RpcError request_failed(std::string_view kind, std::string message);

struct Request {
  Id id;
  std::string method;
  json params;  // object, array, or null when absent
};

struct Notification {
  std::string method;
  json params;
};

// A reply from the peer to a request we sent.
struct Response {
  Id id;
  std::optional<json> result;
  std::optional<RpcError> error;
};

// Something that cannot be dispatched. `id` is set when the message carried a usable one, so
// the error reply can name it; otherwise the reply goes out with a null id.
struct InvalidMessage {
  std::optional<Id> id;
  RpcError error;
  bool is_response = false;  // a malformed reply to one of our calls: not to be answered
};

using Message = std::variant<Request, Notification, Response, InvalidMessage>;

// Parses and validates one frame. Never throws.
Message classify(std::string_view text);

// Serialisation. Strings that are not valid UTF-8 are written with U+FFFD replacements, so a
// reply never fails to encode.
std::string dump(const json& value);
std::string encode_result(const Id& id, const json& result);
std::string encode_error(const std::optional<Id>& id, const RpcError& error);
std::string encode_request(const Id& id, std::string_view method, const json& params);
std::string encode_notification(std::string_view method, const json& params);

}  // namespace lockroom::protocol
