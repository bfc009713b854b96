// Rules and decisions: every host pattern form, ports and schemes, deny wins whatever the order,
// the unmatched default, inspection, the resolved-address gate, and policy JSON with errors that
// name the field.
#include <catch2/catch.hpp>

#include "server/egress/policy/policy_json.h"
#include "server/egress/policy/rules.h"

using namespace lockroom::egress;

namespace {
Policy policy_from(const json& value) {
  auto policy = parse_policy(value);
  INFO(value.dump() << ": " << (policy ? "" : policy.error().message));
  REQUIRE(policy.ok());
  return *policy;
}

Decision decide_for(const Policy& policy, const char* host, int port, Scheme scheme = Scheme::kHttps) {
  auto target = make_target(host, port, scheme);
  INFO(host << ": " << (target ? "" : target.error().message));
  REQUIRE(target.ok());
  return decide(policy, *target);
}

Verdict verdict_for(const Policy& policy, const char* host, int port, Scheme scheme = Scheme::kHttps) {
  return decide_for(policy, host, port, scheme).verdict;
}

std::string policy_error(const json& value) {
  auto policy = parse_policy(value);
  INFO(value.dump());
  REQUIRE_FALSE(policy.ok());
  return policy.error().message;
}

IpAddress ip(const char* text) { return *parse_ip_literal(text); }
}  // namespace

TEST_CASE("exact host rules match that name only, in any case and with a trailing dot") {
  Policy policy = policy_from({{"rules", {{{"action", "allow"}, {"host", "Example.com"}}}}});
  CHECK(verdict_for(policy, "example.com", 443) == Verdict::kAllow);
  CHECK(verdict_for(policy, "EXAMPLE.COM.", 80, Scheme::kHttp) == Verdict::kAllow);
  CHECK(verdict_for(policy, "a.example.com", 443) == Verdict::kDeny);
  CHECK(verdict_for(policy, "example.com.evil.net", 443) == Verdict::kDeny);
  CHECK(verdict_for(policy, "badexample.com", 443) == Verdict::kDeny);
}

TEST_CASE("*.suffix rules match subdomains only, not the apex or look-alikes") {
  Policy policy = policy_from({{"rules", {{{"action", "allow"}, {"host", "*.example.com"}}}}});
  CHECK(verdict_for(policy, "a.example.com", 443) == Verdict::kAllow);
  CHECK(verdict_for(policy, "x.y.example.com", 443) == Verdict::kAllow);
  CHECK(verdict_for(policy, "example.com", 443) == Verdict::kDeny);
  CHECK(verdict_for(policy, "badexample.com", 443) == Verdict::kDeny);
  CHECK(verdict_for(policy, "example.com.evil.net", 443) == Verdict::kDeny);
}

TEST_CASE("address rules match that address in any of its spellings, and names never match them") {
  Policy policy = policy_from({{"rules", {{{"action", "allow"}, {"host", "127.0.0.1"}}, {{"action", "allow"}, {"host", "[::1]"}}}}});
  for (const char* spelling : {"127.0.0.1", "127.1", "0x7f.1", "2130706433", "0177.0.0.1", "[::ffff:127.0.0.1]", "[::1]", "::1"}) {
    INFO(spelling);
    CHECK(verdict_for(policy, spelling, 8080, Scheme::kHttp) == Verdict::kAllow);
  }
  CHECK(verdict_for(policy, "127.0.0.2", 8080) == Verdict::kDeny);
  CHECK(verdict_for(policy, "localhost", 8080) == Verdict::kDeny);

  // A wildcard over numbers is refused, and name rules never match an address.
  CHECK_FALSE(parse_policy({{"rules", {{{"action", "allow"}, {"host", "*.0.1"}}}}}).ok());
  Policy names = policy_from({{"rules", {{{"action", "allow"}, {"host", "*.example"}}, {{"action", "allow"}, {"host", "localhost"}}}}});
  CHECK(verdict_for(names, "127.0.0.1", 80) == Verdict::kDeny);
}

TEST_CASE("the any-host rule matches names and addresses") {
  Policy policy = policy_from({{"rules", {{{"action", "allow"}, {"host", "*"}, {"ports", {443}}}}}});
  CHECK(verdict_for(policy, "anything.example", 443) == Verdict::kAllow);
  CHECK(verdict_for(policy, "1.2.3.4", 443) == Verdict::kAllow);
  CHECK(verdict_for(policy, "1.2.3.4", 80) == Verdict::kDeny);
}

TEST_CASE("ports: single ports, ranges, and any when left out") {
  Policy policy = policy_from(
      {{"rules", {{{"action", "allow"}, {"host", "a.example"}, {"ports", {443, "8000-8100", "22"}}}, {{"action", "allow"}, {"host", "b.example"}}}}});
  CHECK(verdict_for(policy, "a.example", 443) == Verdict::kAllow);
  CHECK(verdict_for(policy, "a.example", 22) == Verdict::kAllow);
  CHECK(verdict_for(policy, "a.example", 8000) == Verdict::kAllow);
  CHECK(verdict_for(policy, "a.example", 8100) == Verdict::kAllow);
  CHECK(verdict_for(policy, "a.example", 8101) == Verdict::kDeny);
  CHECK(verdict_for(policy, "a.example", 7999) == Verdict::kDeny);
  CHECK(verdict_for(policy, "a.example", 80) == Verdict::kDeny);
  CHECK(verdict_for(policy, "b.example", 1) == Verdict::kAllow);
  CHECK(verdict_for(policy, "b.example", 65535) == Verdict::kAllow);
  CHECK_FALSE(make_target("b.example", 0, Scheme::kHttp).ok());
  CHECK_FALSE(make_target("b.example", 65536, Scheme::kHttp).ok());
}

TEST_CASE("schemes: one, a list, or any") {
  Policy policy = policy_from({{"rules",
                                {{{"action", "allow"}, {"host", "a.example"}, {"schemes", "https"}},
                                 {{"action", "allow"}, {"host", "b.example"}, {"schemes", {"http", "tcp"}}},
                                 {{"action", "allow"}, {"host", "c.example"}, {"schemes", "any"}}}}});
  CHECK(verdict_for(policy, "a.example", 443, Scheme::kHttps) == Verdict::kAllow);
  CHECK(verdict_for(policy, "a.example", 80, Scheme::kHttp) == Verdict::kDeny);
  CHECK(verdict_for(policy, "a.example", 443, Scheme::kTcp) == Verdict::kDeny);
  CHECK(verdict_for(policy, "b.example", 80, Scheme::kHttp) == Verdict::kAllow);
  CHECK(verdict_for(policy, "b.example", 22, Scheme::kTcp) == Verdict::kAllow);
  CHECK(verdict_for(policy, "b.example", 443, Scheme::kHttps) == Verdict::kDeny);
  for (Scheme s : {Scheme::kHttp, Scheme::kHttps, Scheme::kTcp}) CHECK(verdict_for(policy, "c.example", 443, s) == Verdict::kAllow);
  CHECK(policy.rules[2].schemes.empty());
}

TEST_CASE("deny wins over any allow, before or after it, and reports the deny rule") {
  json allow_all = {{"action", "allow"}, {"host", "*"}, {"name", "everything"}};
  json allow_exact = {{"action", "allow"}, {"host", "api.example.com"}};
  json deny_suffix = {{"action", "deny"}, {"host", "*.example.com"}, {"name", "no-example"}};
  for (const json& rules : {json{allow_all, allow_exact, deny_suffix}, json{deny_suffix, allow_exact, allow_all},
                            json{allow_exact, deny_suffix, allow_all}}) {
    Policy policy = policy_from({{"rules", rules}});
    Decision d = decide_for(policy, "api.example.com", 443);
    INFO(rules.dump());
    CHECK(d.verdict == Verdict::kDeny);
    CHECK(d.rule == "no-example");
    REQUIRE(d.rule_index);
    CHECK(policy.rules[*d.rule_index].action == Action::kDeny);
    CHECK_THAT(d.reason, Catch::Contains("api.example.com:443"));
    CHECK(verdict_for(policy, "other.org", 443) == Verdict::kAllow);
  }
  // A deny limited to a port only wins on that port.
  Policy ports = policy_from({{"rules", {{{"action", "allow"}, {"host", "*.example.com"}}, {{"action", "deny"}, {"host", "*"}, {"ports", {25}}}}}});
  CHECK(verdict_for(ports, "mail.example.com", 25) == Verdict::kDeny);
  CHECK(verdict_for(ports, "mail.example.com", 587) == Verdict::kAllow);
}

TEST_CASE("the first matching allow rule is reported, unnamed rules by index, the default otherwise") {
  Policy policy = policy_from({{"rules", {{{"action", "allow"}, {"host", "a.example"}, {"ports", {80}}},
                                          {{"action", "allow"}, {"host", "*.example"}, {"name", "all-example"}}}}});
  Decision by_index = decide_for(policy, "a.example", 80);
  CHECK(by_index.verdict == Verdict::kAllow);
  CHECK(by_index.rule_index == std::optional<std::size_t>(0));
  CHECK(by_index.rule == "rules[0]");
  Decision by_name = decide_for(policy, "a.example", 443);
  CHECK(by_name.rule_index == std::optional<std::size_t>(1));
  CHECK(by_name.rule == "all-example");

  Decision unmatched = decide_for(policy, "other.org", 443);
  CHECK(unmatched.verdict == Verdict::kDeny);
  CHECK_FALSE(unmatched.rule_index);
  CHECK(unmatched.rule == "default");
  CHECK_THAT(unmatched.reason, Catch::Contains("other.org:443"));

  Policy ask = policy_from({{"unmatched", "ask"}, {"rules", {{{"action", "deny"}, {"host", "bad.org"}}}}});
  CHECK(verdict_for(ask, "other.org", 443) == Verdict::kAsk);
  CHECK(verdict_for(ask, "bad.org", 443) == Verdict::kDeny);
  CHECK(verdict_for(Policy{}, "other.org", 443) == Verdict::kDeny);
}

TEST_CASE("the default allow list is added unless the policy turns it off, and deny still wins over it") {
  Rule git;
  git.host = *parse_host_pattern("git.example");
  git.name = "default: git";
  Policy with = with_default_allow(policy_from({{"rules", {{{"action", "deny"}, {"host", "*"}, {"ports", {22}}}}}}), {git});
  CHECK(verdict_for(with, "git.example", 443) == Verdict::kAllow);
  CHECK(decide_for(with, "git.example", 443).rule == "default: git");
  CHECK(verdict_for(with, "git.example", 22, Scheme::kTcp) == Verdict::kDeny);
  Policy without = with_default_allow(policy_from({{"defaultAllow", false}}), {git});
  CHECK(verdict_for(without, "git.example", 443) == Verdict::kDeny);
}

TEST_CASE("inspect patterns choose the hosts whose TLS is terminated") {
  Policy policy = policy_from({{"inspect", {"api.example.com", "*.internal.example"}}});
  CHECK(should_inspect(policy, *parse_host("API.example.com")));
  CHECK(should_inspect(policy, *parse_host("x.internal.example")));
  CHECK_FALSE(should_inspect(policy, *parse_host("internal.example")));
  CHECK_FALSE(should_inspect(policy, *parse_host("example.com")));
}

TEST_CASE("resolved addresses in special ranges are denied unless an allow rule names that exact address") {
  Policy policy = policy_from({{"rules", {{{"action", "allow"}, {"host", "*"}}}}});
  for (const char* special : {"127.0.0.1", "10.1.2.3", "172.20.0.1", "192.168.1.1", "100.100.100.200", "169.254.169.254",
                              "0.0.0.0", "0.1.2.3", "224.0.0.1", "255.255.255.255", "192.0.2.1", "240.0.0.1", "::1", "::",
                              "fe80::1", "fd00::1", "ff02::1", "::ffff:127.0.0.1", "64:ff9b::a9fe:a9fe", "2002:a00:1::1"}) {
    AddressCheck check = check_address(policy, ip(special), 443, Scheme::kHttps);
    INFO(special);
    CHECK_FALSE(check.allowed);
    CHECK_THAT(check.reason, Catch::Contains("never reached unless"));
  }
  CHECK(check_address(policy, ip("93.184.215.14"), 443, Scheme::kHttps).allowed);
  CHECK(check_address(policy, ip("2606:4700::1111"), 443, Scheme::kHttps).allowed);

  Policy named = policy_from({{"rules",
                               {{{"action", "allow"}, {"host", "127.0.0.1"}, {"ports", {8080}}, {"name", "dev-server"}},
                                {{"action", "allow"}, {"host", "169.254.169.254"}, {"ports", {80}}},
                                {{"action", "allow"}, {"host", "*.example"}}}}});
  AddressCheck dev = check_address(named, ip("127.0.0.1"), 8080, Scheme::kHttp);
  CHECK(dev.allowed);
  CHECK(dev.rule_index == std::optional<std::size_t>(0));
  CHECK(check_address(named, ip("::ffff:127.0.0.1"), 8080, Scheme::kHttp).allowed);  // the same address
  CHECK_FALSE(check_address(named, ip("127.0.0.1"), 22, Scheme::kTcp).allowed);       // not that port
  CHECK_FALSE(check_address(named, ip("127.0.0.2"), 8080, Scheme::kHttp).allowed);    // not that address
  CHECK_FALSE(check_address(named, ip("64:ff9b::7f00:1"), 8080, Scheme::kHttp).allowed);  // NAT64 is another address
  CHECK(check_address(named, ip("169.254.169.254"), 80, Scheme::kHttp).allowed);
  CHECK_FALSE(check_address(named, ip("169.254.169.253"), 80, Scheme::kHttp).allowed);
}

TEST_CASE("a deny rule naming a public address denies it at the address gate") {
  Policy policy = policy_from({{"rules", {{{"action", "allow"}, {"host", "*"}}, {{"action", "deny"}, {"host", "8.8.8.8"}, {"name", "no-dns"}}}}});
  AddressCheck check = check_address(policy, ip("8.8.8.8"), 443, Scheme::kHttps);
  CHECK_FALSE(check.allowed);
  CHECK_THAT(check.reason, Catch::Contains("no-dns"));
  CHECK(check_address(policy, ip("8.8.4.4"), 443, Scheme::kHttps).allowed);
}

TEST_CASE("policy JSON errors name the field and the bad value") {
  struct Case { json policy; const char* path; const char* detail; };
  const Case cases[] = {
      {json::array(), "network:", "must be an object"},
      {{{"rule", json::array()}}, "network.rule:", "not a known field"},
      {{{"rules", {{{"action", "allow"}, {"host", "a.com"}}, {{"action", "allow"}, {"host", "b.com"}}, {{"action", "allow"}, {"host", "exa mple.com"}}}}},
       "network.rules[2].host:", "\"exa mple.com\" is not a valid host name"},
      {{{"rules", {{{"action", "permit"}, {"host", "a.com"}}}}}, "network.rules[0].action:", "\"permit\""},
      {{{"rules", {{{"host", "a.com"}}}}}, "network.rules[0].action:", "is required"},
      {{{"rules", {{{"action", "allow"}}}}}, "network.rules[0].host:", "is required"},
      {{{"rules", {{{"action", "allow"}, {"host", 7}}}}}, "network.rules[0].host:", "got integer 7"},
      {{{"rules", {{{"action", "allow"}, {"host", "foo*.com"}}}}}, "network.rules[0].host:", "'*' is allowed only"},
      {{{"rules", {{{"action", "allow"}, {"host", "*.1.2.3.4"}}}}}, "network.rules[0].host:", "not addresses"},
      {{{"rules", {{{"action", "allow"}, {"host", "*."}}}}}, "network.rules[0].host:", "'*' is allowed only"},
      {{{"rules", {{{"action", "allow"}, {"host", "a.com"}, {"ports", {0}}}}}}, "network.rules[0].ports[0]:", "0 is not a port"},
      {{{"rules", {{{"action", "allow"}, {"host", "a.com"}, {"ports", {443, 70000}}}}}}, "network.rules[0].ports[1]:", "70000"},
      {{{"rules", {{{"action", "allow"}, {"host", "a.com"}, {"ports", {-1}}}}}}, "network.rules[0].ports[0]:", "-1"},
      {{{"rules", {{{"action", "allow"}, {"host", "a.com"}, {"ports", {"90-80"}}}}}}, "network.rules[0].ports[0]:", "ends before it starts"},
      {{{"rules", {{{"action", "allow"}, {"host", "a.com"}, {"ports", {"80-x"}}}}}}, "network.rules[0].ports[0]:", "\"x\" is not a port"},
      {{{"rules", {{{"action", "allow"}, {"host", "a.com"}, {"ports", {443.5}}}}}}, "network.rules[0].ports[0]:", "must be a port number"},
      {{{"rules", {{{"action", "allow"}, {"host", "a.com"}, {"ports", json::array()}}}}}, "network.rules[0].ports:", "empty list"},
      {{{"rules", {{{"action", "allow"}, {"host", "a.com"}, {"schemes", {"ftp"}}}}}}, "network.rules[0].schemes[0]:", "\"ftp\" is not a scheme"},
      {{{"rules", {{{"action", "allow"}, {"host", "a.com"}, {"name", ""}}}}}, "network.rules[0].name:", "1-128"},
      {{{"inspect", {"ok.com", "bad..com"}}}, "network.inspect[1]:", "empty label"},
      {{{"unmatched", "allow"}}, "network.unmatched:", "\"deny\" or \"ask\""},
      {{{"defaultAllow", "no"}}, "network.defaultAllow:", "true or false"},
  };
  for (const Case& c : cases) {
    std::string message = policy_error(c.policy);
    INFO(c.policy.dump() << " -> " << message);
    CHECK_THAT(message, Catch::StartsWith(c.path));
    CHECK_THAT(message, Catch::Contains(c.detail));
  }
  json too_many = {{"rules", json::array()}};
  for (int i = 0; i < 1025; ++i) too_many["rules"].push_back({{"action", "allow"}, {"host", "a.com"}});
  CHECK_THAT(policy_error(too_many), Catch::Contains("limit is 1024"));
  auto other_prefix = parse_policy({{"rules", 1}}, "kits[0].network");
  CHECK_THAT(other_prefix.error().message, Catch::StartsWith("kits[0].network.rules:"));
}

TEST_CASE("a policy survives its JSON form") {
  Policy policy = policy_from({{"rules",
                                {{{"action", "deny"}, {"host", "*.example.com"}, {"ports", {25, "8000-8100"}}, {"schemes", {"http"}}, {"name", "n"}},
                                 {{"action", "allow"}, {"host", "[::1]"}},
                                 {{"action", "allow"}, {"host", "*"}, {"schemes", "any"}}}},
                               {"inspect", {"api.example.com"}},
                               {"unmatched", "ask"},
                               {"defaultAllow", false}});
  CHECK(policy_from(policy_to_json(policy)) == policy);
  CHECK(policy_to_json(policy)["rules"][1]["host"] == "::1");
}
