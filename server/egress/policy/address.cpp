// IpAddress parsing and classification; see address.h.
#include "server/egress/policy/address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

namespace lockroom::egress {

namespace {

bool is_hex_digit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// The URL standard's "ends in a number" test for the last label.
bool is_numeric_label(std::string_view label) {
  if (label.empty()) return false;
  if (label.size() >= 2 && label[0] == '0' && (label[1] == 'x' || label[1] == 'X')) {
    for (char c : label.substr(2)) {
      if (!is_hex_digit(c)) return false;
    }
    return true;
  }
  for (char c : label) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text.substr(0, 80)) {
    out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  }
  if (text.size() > 80) out += "...";
  return out + "\"";
}

Result<IpAddress> parse_v4(std::string_view text) {
  // inet_aton accepts trailing whitespace followed by anything; allow only the characters its
  // numeric forms use, so what it accepts is exactly an address.
  if (text.empty() || text.size() > 64) {
    return make_error(ErrorCode::kInvalidInput, quoted(text) + " is not an IPv4 address");
  }
  for (char c : text) {
    if (!is_hex_digit(c) && c != '.' && c != 'x' && c != 'X') {
      return make_error(ErrorCode::kInvalidInput,
                        quoted(text) + " ends in a number, so it must be an IPv4 address, but it has '" + std::string(1, c) + "'");
    }
  }
  std::string copy(text);
  in_addr parsed{};
  if (inet_aton(copy.c_str(), &parsed) == 0) {
    return make_error(ErrorCode::kInvalidInput,
                      quoted(text) + " ends in a number but is not a valid IPv4 address (each part must fit its "
                                     "place; octal parts start with 0, hex parts with 0x)");
  }
  return IpAddress::v4(ntohl(parsed.s_addr));
}

Result<IpAddress> parse_v6(std::string_view text) {
  if (text.find('%') != std::string_view::npos) {
    return make_error(ErrorCode::kInvalidInput, quoted(text) + " has an IPv6 zone id, which is not allowed");
  }
  if (text.size() > 64) return make_error(ErrorCode::kInvalidInput, quoted(text) + " is not an IPv6 address");
  std::string copy(text);
  in6_addr parsed{};
  if (inet_pton(AF_INET6, copy.c_str(), &parsed) != 1) {
    return make_error(ErrorCode::kInvalidInput, quoted(text) + " is not a valid IPv6 address");
  }
  std::array<std::uint8_t, 16> bytes{};
  std::memcpy(bytes.data(), &parsed, 16);
  return IpAddress::v6(bytes);
}

struct V4Range {
  std::uint32_t base;
  int prefix;
  AddressClass address_class;
  const char* range;
};

constexpr std::uint32_t ip4(unsigned a, unsigned b, unsigned c, unsigned d) { return (a << 24) | (b << 16) | (c << 8) | d; }

// Most specific first: the first match decides.
const V4Range kV4Ranges[] = {
    {ip4(0, 0, 0, 0), 32, AddressClass::kUnspecified, "0.0.0.0/32 (unspecified)"},
    {ip4(255, 255, 255, 255), 32, AddressClass::kBroadcast, "255.255.255.255/32 (limited broadcast)"},
    {ip4(169, 254, 169, 254), 32, AddressClass::kLinkLocal, "169.254.169.254/32 (link-local: cloud metadata service)"},
    {ip4(0, 0, 0, 0), 8, AddressClass::kThisNetwork, "0.0.0.0/8 (this network)"},
    {ip4(10, 0, 0, 0), 8, AddressClass::kPrivate, "10.0.0.0/8 (private)"},
    {ip4(100, 64, 0, 0), 10, AddressClass::kSharedCgnat, "100.64.0.0/10 (shared address space, CGNAT)"},
    {ip4(127, 0, 0, 0), 8, AddressClass::kLoopback, "127.0.0.0/8 (loopback)"},
    {ip4(169, 254, 0, 0), 16, AddressClass::kLinkLocal, "169.254.0.0/16 (link-local)"},
    {ip4(172, 16, 0, 0), 12, AddressClass::kPrivate, "172.16.0.0/12 (private)"},
    {ip4(192, 0, 0, 0), 24, AddressClass::kReserved, "192.0.0.0/24 (IETF protocol assignments)"},
    {ip4(192, 0, 2, 0), 24, AddressClass::kDocumentation, "192.0.2.0/24 (documentation)"},
    {ip4(192, 88, 99, 0), 24, AddressClass::kReserved, "192.88.99.0/24 (6to4 relay anycast)"},
    {ip4(192, 168, 0, 0), 16, AddressClass::kPrivate, "192.168.0.0/16 (private)"},
    {ip4(198, 18, 0, 0), 15, AddressClass::kReserved, "198.18.0.0/15 (benchmarking)"},
    {ip4(198, 51, 100, 0), 24, AddressClass::kDocumentation, "198.51.100.0/24 (documentation)"},
    {ip4(203, 0, 113, 0), 24, AddressClass::kDocumentation, "203.0.113.0/24 (documentation)"},
    {ip4(224, 0, 0, 0), 4, AddressClass::kMulticast, "224.0.0.0/4 (multicast)"},
    {ip4(240, 0, 0, 0), 4, AddressClass::kReserved, "240.0.0.0/4 (reserved)"},
};

AddressClassification classify_v4(std::uint32_t value) {
  for (const V4Range& r : kV4Ranges) {
    std::uint32_t mask = r.prefix == 0 ? 0 : ~std::uint32_t{0} << (32 - r.prefix);
    if ((value & mask) == r.base) return {r.address_class, r.range, std::nullopt, ""};
  }
  return {};
}

bool prefix_matches(const std::array<std::uint8_t, 16>& bytes, std::initializer_list<std::uint8_t> prefix, int bits) {
  int i = 0;
  for (std::uint8_t p : prefix) {
    int remaining = bits - 8 * i;
    if (remaining <= 0) break;
    std::uint8_t mask = remaining >= 8 ? 0xff : static_cast<std::uint8_t>(0xff << (8 - remaining));
    if ((bytes[i] & mask) != (p & mask)) return false;
    ++i;
  }
  return true;
}

std::uint32_t v4_at(const std::array<std::uint8_t, 16>& b, int offset) {
  return (std::uint32_t{b[offset]} << 24) | (std::uint32_t{b[offset + 1]} << 16) | (std::uint32_t{b[offset + 2]} << 8) |
         std::uint32_t{b[offset + 3]};
}

AddressClassification wrapped(std::uint32_t inner, const char* wrapper) {
  AddressClassification c = classify_v4(inner);
  c.embedded_v4 = IpAddress::v4(inner);
  c.wrapper = wrapper;
  if (!c.range.empty()) c.range = std::string(wrapper) + " " + c.range;
  return c;
}

AddressClassification classify_v6(const std::array<std::uint8_t, 16>& b) {
  constexpr std::uint8_t z = 0;
  auto all_zero = [&](int from, int to) {
    for (int i = from; i < to; ++i) {
      if (b[i] != 0) return false;
    }
    return true;
  };
  if (all_zero(0, 16)) return {AddressClass::kUnspecified, "::/128 (unspecified)", std::nullopt, ""};
  if (all_zero(0, 15) && b[15] == 1) return {AddressClass::kLoopback, "::1/128 (loopback)", std::nullopt, ""};
  if (all_zero(0, 10) && b[10] == 0xff && b[11] == 0xff) return wrapped(v4_at(b, 12), "IPv4-mapped");
  if (all_zero(0, 8) && b[8] == 0xff && b[9] == 0xff && b[10] == 0 && b[11] == 0) {
    return wrapped(v4_at(b, 12), "IPv4-translated");
  }
  if (all_zero(0, 12)) return wrapped(v4_at(b, 12), "IPv4-compatible");
  if (prefix_matches(b, {0x00, 0x64, 0xff, 0x9b, z, z, z, z, z, z, z, z}, 96)) return wrapped(v4_at(b, 12), "NAT64");
  if (prefix_matches(b, {0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48)) {
    return {AddressClass::kPrivate, "64:ff9b:1::/48 (local-use NAT64)", std::nullopt, ""};
  }
  if (prefix_matches(b, {0x01, 0x00, z, z, z, z, z, z}, 64)) return {AddressClass::kReserved, "100::/64 (discard-only)", std::nullopt, ""};
  if (prefix_matches(b, {0x20, 0x01, 0x00, 0x00}, 32)) return {AddressClass::kReserved, "2001::/32 (Teredo tunnel)", std::nullopt, ""};
  if (prefix_matches(b, {0x20, 0x01, 0x00, 0x02, 0x00, 0x00}, 48)) return {AddressClass::kReserved, "2001:2::/48 (benchmarking)", std::nullopt, ""};
  if (prefix_matches(b, {0x20, 0x01, 0x00, 0x10}, 28)) return {AddressClass::kReserved, "2001:10::/28 (ORCHID)", std::nullopt, ""};
  if (prefix_matches(b, {0x20, 0x01, 0x0d, 0xb8}, 32)) return {AddressClass::kDocumentation, "2001:db8::/32 (documentation)", std::nullopt, ""};
  if (prefix_matches(b, {0x3f, 0xff}, 20)) return {AddressClass::kDocumentation, "3fff::/20 (documentation)", std::nullopt, ""};
  if (prefix_matches(b, {0x20, 0x02}, 16)) {
    // 6to4 carries a public IPv4 address of the relay; a special one inside is that class.
    AddressClassification inner = wrapped(v4_at(b, 2), "6to4");
    if (inner.address_class != AddressClass::kPublic) return inner;
    return {AddressClass::kPublic, "", inner.embedded_v4, "6to4"};
  }
  if (prefix_matches(b, {0xfc}, 7)) return {AddressClass::kUniqueLocal, "fc00::/7 (unique local)", std::nullopt, ""};
  if (prefix_matches(b, {0xfe, 0x80}, 10)) return {AddressClass::kLinkLocal, "fe80::/10 (link-local)", std::nullopt, ""};
  if (prefix_matches(b, {0xfe, 0xc0}, 10)) return {AddressClass::kPrivate, "fec0::/10 (site-local, deprecated)", std::nullopt, ""};
  if (b[0] == 0xff) return {AddressClass::kMulticast, "ff00::/8 (multicast)", std::nullopt, ""};
  if ((b[0] & 0xe0) != 0x20) return {AddressClass::kReserved, "outside 2000::/3 (not global unicast)", std::nullopt, ""};
  return {};
}

}  // namespace

IpAddress IpAddress::v4(std::uint32_t host_order) {
  IpAddress a;
  a.family = Family::kV4;
  a.bytes[0] = static_cast<std::uint8_t>(host_order >> 24);
  a.bytes[1] = static_cast<std::uint8_t>(host_order >> 16);
  a.bytes[2] = static_cast<std::uint8_t>(host_order >> 8);
  a.bytes[3] = static_cast<std::uint8_t>(host_order);
  return a;
}

IpAddress IpAddress::v6(const std::array<std::uint8_t, 16>& bytes) {
  IpAddress a;
  a.family = Family::kV6;
  a.bytes = bytes;
  return a;
}

std::uint32_t IpAddress::v4_value() const { return v4_at(bytes, 0); }

IpAddress IpAddress::canonical() const {
  if (family == Family::kV6) {
    bool mapped = bytes[10] == 0xff && bytes[11] == 0xff;
    for (int i = 0; i < 10 && mapped; ++i) mapped = bytes[i] == 0;
    if (mapped) return v4(v4_at(bytes, 12));
  }
  return *this;
}

std::string IpAddress::to_string() const {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(family == Family::kV4 ? AF_INET : AF_INET6, bytes.data(), text, sizeof text);
  return text;
}

std::string IpAddress::url_host() const { return family == Family::kV4 ? to_string() : "[" + to_string() + "]"; }

bool looks_like_ip_literal(std::string_view host) {
  if (host.find(':') != std::string_view::npos || (!host.empty() && host.front() == '[')) return true;
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);
  std::size_t dot = host.rfind('.');
  return is_numeric_label(dot == std::string_view::npos ? host : host.substr(dot + 1));
}

Result<IpAddress> parse_ip_literal(std::string_view text) {
  if (!text.empty() && text.front() == '[') {
    if (text.size() < 2 || text.back() != ']') {
      return make_error(ErrorCode::kInvalidInput, quoted(text) + " opens a bracket for an IPv6 address but does not close it");
    }
    return parse_v6(text.substr(1, text.size() - 2));
  }
  if (text.find(':') != std::string_view::npos) return parse_v6(text);
  if (!text.empty() && text.back() == '.') text.remove_suffix(1);  // "127.0.0.1." as browsers do
  return parse_v4(text);
}

AddressClassification classify_address(const IpAddress& address) {
  return address.family == IpAddress::Family::kV4 ? classify_v4(address.v4_value()) : classify_v6(address.bytes);
}

const char* address_class_name(AddressClass address_class) {
  switch (address_class) {
    case AddressClass::kPublic: return "public";
    case AddressClass::kUnspecified: return "unspecified";
    case AddressClass::kThisNetwork: return "this network";
    case AddressClass::kLoopback: return "loopback";
    case AddressClass::kPrivate: return "private";
    case AddressClass::kSharedCgnat: return "shared (CGNAT)";
    case AddressClass::kLinkLocal: return "link-local";
    case AddressClass::kUniqueLocal: return "unique local";
    case AddressClass::kMulticast: return "multicast";
    case AddressClass::kBroadcast: return "broadcast";
    case AddressClass::kDocumentation: return "documentation";
    case AddressClass::kReserved: return "reserved";
  }
  return "unknown";
}

}  // namespace lockroom::egress
