// Host names as the egress policy compares them.
//
// parse_host() turns what a guest wrote (a URL authority's host, a CONNECT target, an SNI name)
// or what a policy names into one normal form: ASCII lowercase, one trailing dot removed, IP
// literals parsed (see address.h: `0x7f.1` is 127.0.0.1, `[::1]` is ::1). Names must be valid
// DNS host names: labels of 1-63 letters, digits, '-' or '_', not starting or ending with '-',
// 253 characters at most. Internationalised names are compared in the ASCII (xn--) form the
// client sends; a name with non-ASCII bytes is rejected with that advice, never converted.
//
// Pure; no I/O. Any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "server/common/result.h"
#include "server/egress/policy/address.h"

namespace lockroom::egress {

struct Host {
  std::string name;                  // normal form: "example.com", or the canonical IP text "127.0.0.1", "::1"
  std::optional<IpAddress> address;  // set when the host is an IP literal

  bool is_address() const { return address.has_value(); }
  std::string url_host() const { return address ? address->url_host() : name; }  // brackets for IPv6
  friend bool operator==(const Host&, const Host&) = default;
};

constexpr std::size_t kMaxHostNameLength = 253;

Result<Host> parse_host(std::string_view text);
// Only a DNS name (no IP literal), normalised; used for the suffix of "*.example.com".
Result<std::string> normalize_host_name(std::string_view text);

}  // namespace lockroom::egress
