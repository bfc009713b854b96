// Reading an egress Policy from JSON: the `network` field of `sandbox/create` and of kits, and
// the policy a `network/policy` request sets. Errors name the field, e.g.
//   network.rules[2].host: "*foo.com": '*' is allowed only alone ("*") or as the whole first label ...
//
//   {
//     "rules": [                                   // ordered; deny wins (rules.h)
//       {"action": "allow" | "deny",               // required
//        "host": "example.com" | "*.example.com" | "192.0.2.7" | "[::1]" | "*",   // required
//        "ports": [443, "8000-8100"],              // optional, default any
//        "schemes": "https" | ["http", "https", "tcp"] | "any",   // optional, default any
//        "name": "registry",                       // optional, shown in the audit log
//        "origin": "default" | "user"}             // written by policy_to_json: the default allow
//                                                  // list, a user's grant (absent: "policy")
//     ],
//     "inspect": ["api.example.com", "*.example.org"],   // hosts whose TLS the proxy terminates
//     "unmatched": "deny" | "ask",                 // when no rule matches; default "deny"
//     "defaultAllow": true | false                 // add the default allow list; default true
//   }
// A rule marked "origin": "default" is read as such and dropped by with_default_allow (rules.h),
// which adds the current list again when defaultAllow holds: reading and writing back never
// duplicates it. Unknown fields are errors (a typo must not silently widen or narrow a policy). At most 1024
// rules, 1024 inspect patterns and 64 port entries per rule.
//
// Pure; no I/O.
#pragma once

#include <string>

#include "server/egress/policy/json_fields.h"
#include "server/egress/policy/rules.h"

namespace lockroom::egress {

constexpr std::size_t kMaxRules = 1024;
constexpr std::size_t kMaxPortEntries = 64;

Result<Policy> parse_policy(const json& value, const std::string& path = "network");
Result<Rule> parse_rule(const json& value, const std::string& path);
// A rule's "ports": one entry or a non-empty list of ports and "first-last" ranges; and back.
Result<std::vector<PortRange>> parse_ports(const json& value, const std::string& path);
json ports_to_json(const std::vector<PortRange>& ports);
json policy_to_json(const Policy& policy);  // parse_policy(policy_to_json(p)) gives p back

}  // namespace lockroom::egress
