// Grants: the allow rule a user's answer to network/approve adds ("allow for this sandbox"), and
// how wide it may be.
//
// The editor may widen the grant beyond the host and port it was asked about, within bounds:
//   scope.host   the asked host (default); or "*.D", the names strictly below D (as in policies),
//                where the asked host is below D and D is the asked host's registrable domain or
//                lies between the two ("*.example.com" for api.example.com; never "*.com",
//                "*.co.uk", "*.github.io", never "*", never another host or an address range)
//   scope.ports  the asked port (default), "any", or a list of ports and ranges that contains it
// The rule is an allow rule named "user", origin kUser, any scheme.
//
// registrable_domain() is a conservative stand-in for the Public Suffix List (which this build
// does not link): the last two labels, or three when the last two are a known public suffix (a
// two-letter country code under co/com/net/org/gov/edu/ac/..., or a shared-hosting suffix such as
// github.io); it may refuse a wildcard the list would allow, and is not meant to be exhaustive.
//
// Pure; no I/O. Any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/egress/policy/json_fields.h"
#include "server/egress/policy/rules.h"

namespace lockroom::egress {

struct GrantScope {
  std::string host;               // a host pattern; empty: the asked host
  bool any_port = false;          // "ports": "any"
  std::vector<PortRange> ports;   // empty (and not any_port): the asked port
  friend bool operator==(const GrantScope&, const GrantScope&) = default;
};

// "example.co.uk" for "a.b.example.co.uk"; nullopt for an address, a single label, or a name that
// is itself a public suffix.
std::optional<std::string> registrable_domain(std::string_view host_name);

// The rule granting `scope` for a connection to `asked`, or an error saying why the scope is too
// wide or does not cover what was asked.
Result<Rule> grant_rule(const Target& asked, const GrantScope& scope);

// What an editor may offer for `asked`, narrowest first: this host and port; this host, any port;
// and "*.<registrable domain>", any port, when the asked host is a name below its registrable domain.
std::vector<GrantScope> suggested_scopes(const Target& asked);

// {"host": "...", "ports": "any" | [443, "8000-8100"]} (both optional); unknown fields are errors.
Result<GrantScope> parse_grant_scope(const json& value, const std::string& path);
// With the asked target filled in (host and ports always present).
json grant_scope_to_json(const GrantScope& scope, const Target& asked);

}  // namespace lockroom::egress
