// IP addresses for the egress policy: parsing the forms a guest can write, and classifying the
// address the proxy is about to connect to.
//
// Two parsers. parse_ip_literal() reads what a URL or CONNECT target may carry as a host: an
// IPv6 literal (with or without brackets, no zone id) or an IPv4 address in any form that
// inet_aton(3) — and so curl and browsers — accept: `127.1`, `0x7f.1`, `0177.0.0.1`,
// `2130706433`. Every form comes out as one canonical address, so `http://0x7f.1/` cannot slip
// past a rule that names (or a check that forbids) 127.0.0.1.
//
// classify_address() says which special range an address is in. Addresses that wrap an IPv4
// address are unwrapped and the inner address classified: IPv4-mapped (::ffff:0:0/96),
// IPv4-translated (::ffff:0:0:0/96), the deprecated IPv4-compatible ::/96, NAT64 well-known
// prefix 64:ff9b::/96 and 6to4 2002::/16. Teredo (2001::/32, an obfuscated tunnel) and the
// local-use NAT64 prefix 64:ff9b:1::/48 are not unwrapped: they are special ranges themselves and
// never reached unless named. check_address() in rules.h applies the policy to a class.
//
// Pure; no I/O. Any thread.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "server/common/result.h"

namespace lockroom::egress {

struct IpAddress {
  enum class Family { kV4, kV6 };
  Family family = Family::kV4;
  std::array<std::uint8_t, 16> bytes{};  // network order; an IPv4 address uses the first 4

  static IpAddress v4(std::uint32_t host_order);
  static IpAddress v6(const std::array<std::uint8_t, 16>& bytes);
  std::uint32_t v4_value() const;  // host order; only for kV4

  // The same address as the kernel would connect to it: an IPv4-mapped IPv6 address becomes
  // the IPv4 address; everything else is unchanged.
  IpAddress canonical() const;
  std::string to_string() const;   // 127.0.0.1, ::1
  std::string url_host() const;    // 127.0.0.1, [::1]

  friend bool operator==(const IpAddress&, const IpAddress&) = default;
};

// True when `host` must be read as an IP address rather than a name: it contains ':' (IPv6),
// is bracketed, or its last dot-separated label is a number (decimal, or hex with 0x), which is
// how the URL standard decides. A host like that which then fails to parse is invalid, never a
// name.
bool looks_like_ip_literal(std::string_view host);

// See the header comment. Errors name the text and say what was wrong.
Result<IpAddress> parse_ip_literal(std::string_view text);

enum class AddressClass {
  kPublic,
  kUnspecified,    // 0.0.0.0, ::
  kThisNetwork,    // 0.0.0.0/8
  kLoopback,       // 127.0.0.0/8, ::1
  kPrivate,        // 10/8, 172.16/12, 192.168/16, fec0::/10 (deprecated site-local)
  kSharedCgnat,    // 100.64.0.0/10
  kLinkLocal,      // 169.254.0.0/16 (cloud metadata 169.254.169.254), fe80::/10
  kUniqueLocal,    // fc00::/7
  kMulticast,      // 224.0.0.0/4, ff00::/8
  kBroadcast,      // 255.255.255.255
  kDocumentation,  // 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32, 3fff::/20
  kReserved,       // everything else special: 240/4, 192.0.0/24, 198.18/15, Teredo, ...
};

struct AddressClassification {
  AddressClass address_class = AddressClass::kPublic;
  // The range that decided, for messages: "127.0.0.0/8 (loopback)". Empty for public addresses.
  std::string range;
  // Set when the class came from an IPv4 address wrapped in an IPv6 one; `wrapper` names how
  // ("IPv4-mapped", "NAT64", "6to4", ...).
  std::optional<IpAddress> embedded_v4;
  std::string wrapper;
};

AddressClassification classify_address(const IpAddress& address);
const char* address_class_name(AddressClass address_class);

}  // namespace lockroom::egress
