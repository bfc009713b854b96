// Result<T>: the return type of anything that can fail on input.
//
// An expected-style value-or-error. Errors carry a machine-readable code and a message written for
// the person who will read it (what was wrong, the offending value, what to do). JSON-RPC codes
// are chosen only at the protocol edge; the core speaks in ErrorCode.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace lockroom {

enum class ErrorCode {
  kInvalidInput,   // the caller sent something malformed or out of range
  kNotFound,       // a named thing does not exist
  kWrongState,     // the operation is not allowed in the current state
  kLimitExceeded,  // a configured bound was hit
  kUnavailable,    // a needed resource (program, device, peer) is missing or gone
  kCancelled,      // the caller withdrew the request
  kInternal,       // a bug or an unexpected failure of the host
};

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  // For kInvalidInput about one field of a request: its dotted path as the client wrote it
  // (e.g. "resources.memoryMiB"); the edge sends it as `data.field`. Empty when the problem is
  // not one field's (e.g. a combination of fields, or the contents of a file a field names).
  std::string field = {};
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { assert(ok()); return std::get<0>(v_); }
  const T& value() const& { assert(ok()); return std::get<0>(v_); }
  T&& value() && { assert(ok()); return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const { assert(!ok()); return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Result<void>: success carries nothing.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT: implicit by design
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { assert(!ok_); return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

inline Error make_error(ErrorCode code, std::string message) { return Error{code, std::move(message)}; }
// A kInvalidInput error about the request field `field` (a dotted path).
inline Error make_field_error(std::string field, std::string message) {
  return Error{ErrorCode::kInvalidInput, std::move(message), std::move(field)};
}
// `error` attributed to the request field `field` when it is kInvalidInput (e.g. a broken kit
// file is the fault of the request's "kits", whatever field of the file it names).
inline Error with_field(Error error, std::string field) {
  if (error.code == ErrorCode::kInvalidInput) error.field = std::move(field);
  return error;
}

}  // namespace lockroom
