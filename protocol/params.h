// Typed reading of request params, with errors that name the bad field.
//
// Handlers at the protocol edge use a ParamReader to turn a JSON params value into typed fields.
// The first problem is kept as a ready-to-send -32602 error whose `data.field` is the dotted path:
//   invalid params: "resources.memoryMiB" must be an integer, got "lots"
//   {"code": -32602, "message": ..., "data": {"field": "resources.memoryMiB"}}
// The reader remembers every field it was asked for, so a read_* function ends with
// reject_unknown() and a misspelt field is refused, naming the nearest known one:
//   invalid params: "resources.memoryMb" is not a known field; did you mean "resources.memoryMiB"?
// Nested readers (object(), or one built on an item of an array) hand their unknown fields to
// their parent through merge(); the top reader's reject_unknown() reports the first of all.
// Pure; no I/O.
#pragma once

#include <cstdint>
#include <initializer_list>
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

  // Unless an error is already kept: refuses the first field of the params that no getter asked
  // for (here or in a merged nested reader), naming the nearest known field when one is close.
  // `read_elsewhere` are fields the caller reads by other means (e.g. a policy parser); at the top
  // level `workDoneToken` and `partialResultToken` are always allowed.
  void reject_unknown(std::initializer_list<const char*> read_elsewhere = {});

  bool ok() const { return !error_; }
  const RpcError& error() const { return *error_; }

  // The known field nearest to `name` (case-insensitive edit distance, at most a third of the
  // longer name and at least 1), or "" when none is close. Exposed for tests.
  static std::string nearest(const std::string& name, const std::vector<std::string>& known);

 private:
  struct Unknown {
    std::string field;      // the full dotted path of the unknown field
    std::string problem;    // "is not a known field; did you mean ..."
  };
  std::optional<Unknown> first_unknown(std::initializer_list<const char*> read_elsewhere) const;
  const json* find(const char* field, bool required);
  void type_error(const char* field, const char* expected, const json& got);
  std::string path(const char* field) const { return prefix_ + field; }

  const json* object_ = nullptr;  // never owned: the caller's params, or a shared empty object
  std::string prefix_;
  std::optional<RpcError> error_;
  std::vector<std::string> asked_;         // every field a getter was asked for, in order
  std::optional<Unknown> nested_unknown_;  // the first unknown field of a merged nested reader
};

// The -32602 error for `field` (a dotted path, "" for the params as a whole): message
// `invalid params: "<field>" <problem>`, data {field}. The one format of every -32602.
RpcError invalid_params(const std::string& field, const std::string& problem);

}  // namespace lockroom::protocol
