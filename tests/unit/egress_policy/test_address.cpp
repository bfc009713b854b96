// Address parsing (every form inet_aton accepts, IPv6 with and without brackets) and the
// classification of each special range, including IPv4 wrapped in IPv6.
#include <catch2/catch.hpp>

#include "server/egress/policy/address.h"
#include "server/egress/policy/host_name.h"

using namespace lockroom::egress;

namespace {
IpAddress ip(const char* text) {
  auto parsed = parse_ip_literal(text);
  INFO(text << ": " << (parsed ? "" : parsed.error().message));
  REQUIRE(parsed.ok());
  return *parsed;
}
AddressClass class_of(const char* text) { return classify_address(ip(text)).address_class; }
}  // namespace

TEST_CASE("odd IPv4 forms are read the way inet_aton, curl and browsers read them") {
  for (const char* form : {"127.0.0.1", "127.1", "127.0.1", "0x7f.1", "0x7F.0.0.1", "0177.0.0.1", "2130706433",
                           "0x7f000001", "017700000001", "127.0.0.1."}) {
    INFO(form);
    CHECK(ip(form).to_string() == "127.0.0.1");
  }
  CHECK(ip("1.2.3.4").to_string() == "1.2.3.4");
  CHECK(ip("3232235777").to_string() == "192.168.1.1");
  CHECK(ip("169.254.43518").to_string() == "169.254.169.254");
}

TEST_CASE("things that end in a number but are not addresses are errors, not names") {
  for (const char* bad : {"1.2.3.256", "256.1.1.1", "1.2.3.4.5", "08.1.1.1", "0x1g.1", "4294967296", "1.2.3.4 x",
                          "127.0.0.1\tevil.com", "", "1..2"}) {
    INFO(bad);
    CHECK_FALSE(parse_ip_literal(bad).ok());
  }
  auto error = parse_ip_literal("1.2.3.256");
  CHECK_THAT(error.error().message, Catch::Contains("\"1.2.3.256\""));
}

TEST_CASE("IPv6 literals with and without brackets, zone ids and junk refused") {
  CHECK(ip("[::1]").to_string() == "::1");
  CHECK(ip("::1").url_host() == "[::1]");
  CHECK(ip("[2001:DB8::1]").to_string() == "2001:db8::1");
  CHECK(ip("::ffff:127.0.0.1").family == IpAddress::Family::kV6);
  CHECK(ip("::ffff:127.0.0.1").canonical() == ip("127.0.0.1"));
  CHECK_FALSE(parse_ip_literal("[::1").ok());
  CHECK_FALSE(parse_ip_literal("fe80::1%eth0").ok());
  CHECK_FALSE(parse_ip_literal("[fe80::1%25eth0]").ok());
  CHECK_FALSE(parse_ip_literal("::g").ok());
  CHECK_FALSE(parse_ip_literal("1:2:3:4:5:6:7:8:9").ok());
}

TEST_CASE("each special IPv4 range has its class") {
  struct Case { const char* address; AddressClass expected; };
  const Case cases[] = {
      {"0.0.0.0", AddressClass::kUnspecified},      {"0.1.2.3", AddressClass::kThisNetwork},
      {"10.0.0.1", AddressClass::kPrivate},         {"10.255.255.255", AddressClass::kPrivate},
      {"100.64.0.1", AddressClass::kSharedCgnat},   {"100.127.255.254", AddressClass::kSharedCgnat},
      {"100.128.0.1", AddressClass::kPublic},       {"100.63.255.255", AddressClass::kPublic},
      {"127.0.0.1", AddressClass::kLoopback},       {"127.255.0.9", AddressClass::kLoopback},
      {"169.254.169.254", AddressClass::kLinkLocal}, {"169.254.1.1", AddressClass::kLinkLocal},
      {"172.16.0.1", AddressClass::kPrivate},       {"172.31.255.255", AddressClass::kPrivate},
      {"172.32.0.1", AddressClass::kPublic},        {"172.15.255.255", AddressClass::kPublic},
      {"192.168.0.1", AddressClass::kPrivate},      {"192.169.0.1", AddressClass::kPublic},
      {"192.0.0.8", AddressClass::kReserved},       {"192.0.2.1", AddressClass::kDocumentation},
      {"198.51.100.7", AddressClass::kDocumentation}, {"203.0.113.9", AddressClass::kDocumentation},
      {"198.18.0.1", AddressClass::kReserved},      {"198.19.255.255", AddressClass::kReserved},
      {"198.20.0.1", AddressClass::kPublic},        {"224.0.0.1", AddressClass::kMulticast},
      {"239.255.255.250", AddressClass::kMulticast}, {"240.0.0.1", AddressClass::kReserved},
      {"255.255.255.255", AddressClass::kBroadcast}, {"8.8.8.8", AddressClass::kPublic},
      {"1.1.1.1", AddressClass::kPublic},
  };
  for (const Case& c : cases) {
    INFO(c.address << " is " << address_class_name(classify_address(ip(c.address)).address_class));
    CHECK(class_of(c.address) == c.expected);
  }
  CHECK_THAT(classify_address(ip("169.254.169.254")).range, Catch::Contains("metadata"));
}

TEST_CASE("each special IPv6 range has its class, and wrapped IPv4 is unwrapped") {
  struct Case { const char* address; AddressClass expected; };
  const Case cases[] = {
      {"::", AddressClass::kUnspecified},
      {"::1", AddressClass::kLoopback},
      {"fe80::1", AddressClass::kLinkLocal},
      {"febf::1", AddressClass::kLinkLocal},
      {"fec0::1", AddressClass::kPrivate},
      {"fc00::1", AddressClass::kUniqueLocal},
      {"fd00:ec2::254", AddressClass::kUniqueLocal},
      {"ff02::1", AddressClass::kMulticast},
      {"2001:db8::1", AddressClass::kDocumentation},
      {"3fff::1", AddressClass::kDocumentation},
      {"2001::1", AddressClass::kReserved},  // Teredo
      {"100::1", AddressClass::kReserved},
      {"64:ff9b:1::1", AddressClass::kPrivate},
      {"4000::1", AddressClass::kReserved},
      {"2606:4700::1111", AddressClass::kPublic},
      // IPv4 inside IPv6
      {"::ffff:127.0.0.1", AddressClass::kLoopback},
      {"::ffff:7f00:1", AddressClass::kLoopback},
      {"::ffff:169.254.169.254", AddressClass::kLinkLocal},
      {"::ffff:8.8.8.8", AddressClass::kPublic},
      {"::ffff:0:10.0.0.1", AddressClass::kPrivate},  // IPv4-translated
      {"::127.0.0.1", AddressClass::kLoopback},       // IPv4-compatible (deprecated)
      {"64:ff9b::10.1.2.3", AddressClass::kPrivate},  // NAT64
      {"64:ff9b::a9fe:a9fe", AddressClass::kLinkLocal},
      {"64:ff9b::8.8.8.8", AddressClass::kPublic},
      {"2002:7f00:1::", AddressClass::kLoopback},     // 6to4 of 127.0.0.1
      {"2002:c0a8:101::1", AddressClass::kPrivate},   // 6to4 of 192.168.1.1
      {"2002:808:808::1", AddressClass::kPublic},     // 6to4 of 8.8.8.8
  };
  for (const Case& c : cases) {
    INFO(c.address << " is " << address_class_name(classify_address(ip(c.address)).address_class) << " "
                   << classify_address(ip(c.address)).range);
    CHECK(class_of(c.address) == c.expected);
  }
  auto nat64 = classify_address(ip("64:ff9b::a9fe:a9fe"));
  REQUIRE(nat64.embedded_v4);
  CHECK(nat64.embedded_v4->to_string() == "169.254.169.254");
  CHECK(nat64.wrapper == "NAT64");
  CHECK_THAT(nat64.range, Catch::StartsWith("NAT64 169.254.169.254/32"));
}

TEST_CASE("host names are normalised and invalid ones rejected with the reason") {
  CHECK(parse_host("Example.COM.")->name == "example.com");
  CHECK(parse_host("xn--bcher-kva.example")->name == "xn--bcher-kva.example");
  CHECK(parse_host("_srv.a-b.example")->name == "_srv.a-b.example");
  auto ip_host = parse_host("0x7f.1");
  REQUIRE(ip_host.ok());
  CHECK(ip_host->is_address());
  CHECK(ip_host->name == "127.0.0.1");
  CHECK(parse_host("[::ffff:127.0.0.1]")->name == "127.0.0.1");
  CHECK(parse_host("[::1]")->url_host() == "[::1]");

  struct Bad { std::string host; const char* why; };
  const Bad bad[] = {
      {"", "empty"},
      {"a..b", "empty label"},
      {".a.b", "empty label"},
      {"exa mple.com", "' '"},
      {"a/b.com", "'/'"},
      {"-a.com", "starts or ends with '-'"},
      {"a-.com", "starts or ends with '-'"},
      {"b\xc3\xbc" "cher.example", "xn--"},
      {std::string(64, 'a') + ".com", "longer than 63"},
      {std::string(250, 'a').insert(60, ".").insert(120, ".").insert(180, ".") + ".com", "limit is 253"},
      {"a.com\r\nX: y", "IPv6"},  // the ':' makes it an IPv6 literal
      {"a.com\r\nb", "control character"},
      {"example.123", "must be an IPv4 address"},
  };
  for (const Bad& b : bad) {
    auto result = parse_host(b.host);
    INFO(b.host);
    REQUIRE_FALSE(result.ok());
    CHECK_THAT(result.error().message, Catch::Contains(b.why));
  }
}
