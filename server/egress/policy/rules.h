// Egress rules and the decisions made from them.
//
// A Policy is an ordered list of rules, the host patterns whose TLS the proxy terminates to look
// inside (`inspect`), and what happens when no rule matches (deny, or ask the editor). A rule
// allows or denies by host pattern, port and scheme:
//
//   host  "example.com"    exactly that name
//         "*.example.com"  any name strictly below example.com — NOT example.com itself (as in
//                          TLS certificates); write both patterns to cover the apex too
//         "192.0.2.7", "::1"  that address (any form parse_host accepts, compared canonically)
//         "*"              any host, names and addresses
//   ports  empty = any; otherwise single ports and ranges
//   schemes empty = any; http (plain HTTP through the proxy), https (TLS, tunnelled or
//          inspected), tcp (a CONNECT tunnel that is not TLS, e.g. ssh)
//
// decide(): **deny wins** — if any deny rule matches the target it is denied, whatever the order;
// otherwise the first matching allow rule allows; otherwise the policy's default (deny or ask).
// Rule order only chooses which allow rule is reported.
//
// check_address(): the second gate, on the address the proxy resolved and is about to connect
// to (so a name that resolves to 127.0.0.1 is caught there, not here). Loopback, private, CGNAT,
// link-local (cloud metadata), unique-local, multicast, documentation and other special ranges
// (see address.h) are denied unless an allow rule names that exact address and matches the
// port and scheme; a deny rule naming the exact address denies it even when it is public.
//
// Pure; no I/O. Any thread. JSON parsing is in policy_json.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/common/result.h"
#include "server/egress/policy/address.h"
#include "server/egress/policy/host_name.h"

namespace lockroom::egress {

enum class Action { kAllow, kDeny };
enum class Scheme { kHttp, kHttps, kTcp };
const char* scheme_name(Scheme scheme);

struct HostPattern {
  enum class Kind { kExact, kSuffix, kAddress, kAny };
  Kind kind = Kind::kExact;
  std::string name;  // kExact: the name; kSuffix: the parent name without "*."
  IpAddress address;  // kAddress, canonical

  bool matches(const Host& host) const;
  std::string text() const;  // as it would be written in a policy
  friend bool operator==(const HostPattern&, const HostPattern&) = default;
};

// "example.com", "*.example.com", "10.0.0.1", "[::1]", "*". Errors say what was wrong.
Result<HostPattern> parse_host_pattern(std::string_view text);

struct PortRange {
  std::uint16_t first = 1;
  std::uint16_t last = 65535;
  bool contains(std::uint16_t port) const { return port >= first && port <= last; }
  friend bool operator==(const PortRange&, const PortRange&) = default;
};

// Where a rule came from, so an editor can show it and a policy read and written back does not
// grow: kPolicy (written in the request, a kit or a network/policy write), kDefault (the default
// allow list, added by with_default_allow), kUser (a grant the user made answering network/approve).
enum class RuleOrigin { kPolicy, kDefault, kUser };
const char* rule_origin_name(RuleOrigin origin);  // "policy", "default", "user"

struct Rule {
  Action action = Action::kAllow;
  HostPattern host;
  std::vector<PortRange> ports;  // empty: any port
  std::vector<Scheme> schemes;   // empty: any scheme
  std::string name;              // for the audit log; may be empty
  RuleOrigin origin = RuleOrigin::kPolicy;

  bool matches_port_and_scheme(std::uint16_t port, Scheme scheme) const;
  friend bool operator==(const Rule&, const Rule&) = default;
};

enum class WhenUnmatched { kDeny, kAsk };

struct Policy {
  std::vector<Rule> rules;
  std::vector<HostPattern> inspect;
  WhenUnmatched when_unmatched = WhenUnmatched::kDeny;
  // Whether the default allow list (default_allow.h) is added to `rules`. A kit or request
  // that sets "defaults": false replaces it with its own rules entirely.
  bool use_default_allow = true;
  friend bool operator==(const Policy&, const Policy&) = default;
};

// Drops every rule of the policy marked kDefault (a policy read with network/policy and written
// back carries them), then appends `defaults`, marked kDefault, when the policy uses the default
// allow list. So the list is never added twice, and "defaultAllow": false removes it whatever
// rules came marked. Deny rules in the policy still win over them.
Policy with_default_allow(Policy policy, const std::vector<Rule>& defaults);

// What the guest asked to reach.
struct Target {
  Host host;
  std::uint16_t port = 0;
  Scheme scheme = Scheme::kHttps;
};
// Normalises `host` (parse_host) and checks the port (1-65535).
Result<Target> make_target(std::string_view host, int port, Scheme scheme);

enum class Verdict { kAllow, kDeny, kAsk };
const char* verdict_name(Verdict verdict);

struct Decision {
  Verdict verdict = Verdict::kDeny;
  std::optional<std::size_t> rule_index;  // unset when the default decided
  std::string rule;                       // the rule's name, "rules[i]" when it has none, or "default"
  std::string reason;                     // one sentence for the audit log and the editor
};

Decision decide(const Policy& policy, const Target& target);

// Whether the proxy should terminate TLS for this host (policy.inspect).
bool should_inspect(const Policy& policy, const Host& host);

struct AddressCheck {
  bool allowed = false;
  AddressClassification classification;
  std::optional<std::size_t> rule_index;  // the rule naming the address, if one decided
  std::string reason;                     // set when denied
};

AddressCheck check_address(const Policy& policy, const IpAddress& address, std::uint16_t port, Scheme scheme);

// "name" or "rules[i]" for messages.
std::string rule_label(const Policy& policy, std::size_t index);

}  // namespace lockroom::egress
