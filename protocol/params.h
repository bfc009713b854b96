// Typed reading of request params, with errors that name the bad field.
//
// Handlers at the protocol edge use a ParamReader to turn a JSON params value into typed fields.
// The first problem is kept as a ready-to-send -32602 error such as
//   invalid params: "resources.memoryMiB" must be an integer, got "lots"
// Pure; no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "protocol/jsonrpc.h"

namespace lockroom::protocol {

class ParamReader {
 public:
  // `params` may be null (treated as an empty object). Anything but an object is an error.
  explicit ParamReader(const json& params, std::string prefix = "");

  std::optional<std::string> string(const char* field, bool required);
  std::optional<std::int64_t> integer(const char* field, bool required, std::int64_t min = INT64_MIN,
                                      std::int64_t max = INT64_MAX);
  std::optional<bool> boolean(const char* field, bool required);
  std::optional<std::vector<std::string>> strings(const char* field, bool required);
  // An object whose values are all strings, e.g. environment variables.
  std::optional<std::map<std::string, std::string>> string_map(const char* field, bool required);
  // Any JSON value; present-ness is the only check.
  std::optional<json> any(const char* field, bool required);
  // A nested object, read with its own reader whose errors carry the full dotted path. The
  // nested reader's problems must be merged back with merge().
  std::optional<ParamReader> object(const char* field, bool required);
  void merge(const ParamReader& nested);

  // Reports an error found by the caller's own validation of `field`.
  void fail(const char* field, const std::string& problem);

  bool ok() const { return !error_; }
  const RpcError& error() const { return *error_; }

 private:
  const json* find(const char* field, bool required);
  void type_error(const char* field, const char* expected, const json& got);
  std::string path(const char* field) const { return prefix_ + field; }

  const json* object_ = nullptr;  // never owned: the caller's params, or a shared empty object
  std::string prefix_;
  std::optional<RpcError> error_;
};

}  // namespace lockroom::protocol
