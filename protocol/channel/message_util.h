// Helpers shared by the messages_*.cpp files: turning a ParamReader's verdict into a Result, and
// field checks every method needs (paths, NUL bytes, base64). Internal to protocol/channel.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "protocol/params.h"
#include "server/common/result.h"

namespace lockroom::protocol::channel::detail {

// The reader's first problem without JSON-RPC's "invalid params: " prefix: the agent adds it back
// in its -32602 reply, the server says "malformed reply to <method>: ..." instead.
inline Error reader_error(const ParamReader& reader) {
  std::string message = reader.error().message;
  const std::string prefix = "invalid params: ";
  if (message.rfind(prefix, 0) == 0) message.erase(0, prefix.size());
  return make_error(ErrorCode::kInvalidInput, std::move(message));
}

template <typename T>
Result<T> finish(const ParamReader& reader, T value) {
  if (!reader.ok()) return reader_error(reader);
  return value;
}

// A string that reaches a system call: no NUL bytes, at most `max` bytes, and (when `nonempty`)
// not empty. Reports through the reader.
inline void check_text(ParamReader& reader, const char* field, const std::string& value, std::size_t max, bool nonempty) {
  if (nonempty && value.empty()) return reader.fail(field, "must not be empty");
  if (value.size() > max) return reader.fail(field, "is " + std::to_string(value.size()) + " bytes long; the limit is " + std::to_string(max));
  if (value.find('\0') != std::string::npos) reader.fail(field, "contains a NUL byte, which no path or argument can hold");
}

// Who a guest program or write runs as: absent (the unprivileged default user), "agent" or
// "root" (guest/guest_user.h).
inline std::optional<std::string> read_user(ParamReader& reader) {
  auto user = reader.string("user", false);
  if (user && *user != "agent" && *user != "root") reader.fail("user", "must be \"agent\" or \"root\", got \"" + user->substr(0, 32) + "\"");
  return user;
}

// A required base64 field, decoded, with at most `max` decoded bytes.
std::string read_base64(ParamReader& reader, const char* field, bool required, std::size_t max);

}  // namespace lockroom::protocol::channel::detail
