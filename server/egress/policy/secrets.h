// Secrets: capability, not custody. The guest holds a sentinel (sentinel.h); the host puts the
// real value into requests to the secret's hosts, and blocks requests that carry a sentinel
// anywhere else.
//
// A secret, as a kit or `sandbox/create` declares it:
//   {"name": "github_token",                         // letters, digits, '_'; sentinel LOCKROOM_SECRET_GITHUB_TOKEN
//    "from": {"env": "GITHUB_TOKEN"}                  // or {"file": "/abs/path"}
//            | {"command": ["gh", "auth", "token"], "timeoutMs": 5000},
//    "hosts": ["api.github.com", "*.github.com"],     // host patterns (rules.h), at least one
//    "inject": {"header": "Authorization", "value": "Bearer {value}"} | "sentinel"}
// "sentinel" (the default) replaces the sentinel wherever it appears in a header value of a
// request to one of the hosts. A header injection sets that header (replacing any the client
// sent) on every request to one of the hosts, and also replaces sentinels in header values.
// Values are never put into the request line: a URL ends up in logs (the sentinel stays there).
//
// inject_secrets() is pure: the values are resolved beforehand (secret_source.h) and passed in.
// Never log a value; errors about a value name the secret only.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/common/result.h"
#include "server/egress/policy/http_head.h"
#include "server/egress/policy/json_fields.h"
#include "server/egress/policy/rules.h"
#include "server/egress/policy/sentinel.h"

namespace lockroom::egress {

struct SecretSource {
  enum class Kind { kEnv, kFile, kCommand };
  Kind kind = Kind::kEnv;
  std::string env;                   // kEnv: the host environment variable
  // kEnv: where to read it when not this process's environment: the editor's, sent by the
  // `serve --stdio` bridge to a shared server (server/serve/hello.h). Never parsed from JSON.
  std::shared_ptr<const std::map<std::string, std::string>> environment;
  std::string file;                  // kFile: an absolute path on the host
  std::vector<std::string> command;  // kCommand: argv, run without a shell
  std::chrono::milliseconds timeout{5000};  // kCommand
  friend bool operator==(const SecretSource&, const SecretSource&) = default;
};

struct HeaderInjection {
  std::string header;          // a valid header name
  std::string value_template;  // contains "{value}" exactly once
  friend bool operator==(const HeaderInjection&, const HeaderInjection&) = default;
};

struct Secret {
  std::string name;
  SecretSource from;
  std::vector<HostPattern> hosts;
  std::optional<HeaderInjection> header;  // unset: sentinel substitution only

  std::string sentinel() const { return sentinel_for(name); }
  bool scoped_to(const Host& host) const;
  friend bool operator==(const Secret&, const Secret&) = default;
};

constexpr std::size_t kMaxSecrets = 64;

// `path` names the field in errors: "secrets[1].hosts[0]: ...".
Result<Secret> parse_secret(const json& value, const std::string& path);
// A list; names must be unique once uppercased.
Result<std::vector<Secret>> parse_secrets(const json& value, const std::string& path = "secrets");

// Resolved values by secret name. Only secrets whose values are needed must be present.
using SecretValues = std::map<std::string, std::string>;

struct InjectionResult {
  bool blocked = false;
  std::string blocked_secret;        // when blocked: the secret whose sentinel was found
  std::string reason;                // when blocked: "sentinel of secret X sent to host Y, which is not one of its hosts (in header Z)"
  RequestHead head;                  // when not blocked: the head with values in place
  std::vector<std::string> injected;  // names of the secrets whose values were put in
};

// Checks and rewrites one request to `head.host`. Blocked when any sentinel appears, for a host
// outside that secret's hosts, in the request line, the host name or any header (name or
// value). Errors (kUnavailable) when a needed value is missing, (kInvalidInput) when a value
// cannot go into a header (a line break or NUL in it).
Result<InjectionResult> inject_secrets(const RequestHead& head, const std::vector<Secret>& secrets, const SecretValues& values);

// The sentinels of `secrets`, in the same order (for SentinelScanner and find_sentinels).
std::vector<std::string> sentinels_of(const std::vector<Secret>& secrets);

}  // namespace lockroom::egress
