// Reading a secret's value on the host: from an environment variable, a file, or the output of
// a command run with a timeout. The one part of the egress policy library that does I/O.
//
// The value is trimmed of surrounding whitespace and must then be non-empty, at most 64 KiB, and
// free of line breaks and NUL (it goes into an HTTP header). Commands run without a shell, with
// stdin and stderr on /dev/null, in their own process group, which is killed when the timeout
// passes. Errors name the secret and the source, never the value; nothing here logs.
//
// Blocking (a command may take up to its timeout): call it from a worker thread, never on the
// loop.
#pragma once

#include <string>

#include "server/common/result.h"
#include "server/egress/policy/secrets.h"

namespace lockroom::egress {

constexpr std::size_t kMaxSecretValueBytes = 64 * 1024;

Result<std::string> resolve_secret_value(const Secret& secret);

// Every value the secrets need, by name; the first failure is the error.
Result<SecretValues> resolve_secret_values(const std::vector<Secret>& secrets);

}  // namespace lockroom::egress
