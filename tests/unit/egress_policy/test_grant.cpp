// Grants from a user's answer to network/approve (grant.h): the registrable-domain bound, the
// scopes an editor may offer, and every way a scope can be too wide or miss the asked host.
#include <catch2/catch.hpp>

#include "server/egress/policy/grant.h"
#include "server/egress/policy/policy_json.h"

using namespace lockroom::egress;

namespace {

Target target(const char* host, int port) {
  auto t = make_target(host, port, Scheme::kHttps);
  REQUIRE(t.ok());
  return *t;
}

std::string granted(const char* host, int port, GrantScope scope) {
  auto rule = grant_rule(target(host, port), scope);
  if (!rule) return "error: " + rule.error().message;
  return rule->host.text() + " " + ports_to_json(rule->ports).dump();
}

}  // namespace

TEST_CASE("registrable domains: two labels, three under a known public suffix, none for addresses and suffixes") {
  CHECK(registrable_domain("api.example.com") == "example.com");
  CHECK(registrable_domain("example.com") == "example.com");
  CHECK(registrable_domain("a.b.example.co.uk") == "example.co.uk");
  CHECK(registrable_domain("pkg.example.com.au") == "example.com.au");
  CHECK(registrable_domain("me.github.io") == "me.github.io");
  CHECK(registrable_domain("x.me.github.io") == "me.github.io");
  CHECK(registrable_domain("example.de") == "example.de");
  CHECK_FALSE(registrable_domain("co.uk"));
  CHECK_FALSE(registrable_domain("github.io"));
  CHECK_FALSE(registrable_domain("localhost"));
  CHECK_FALSE(registrable_domain("192.0.2.7"));
  CHECK_FALSE(registrable_domain("2001:db8::1"));
  CHECK_FALSE(registrable_domain(""));
}

TEST_CASE("a grant is the asked host and port unless the scope widens it within bounds") {
  CHECK(granted("api.example.com", 443, {}) == "api.example.com [443]");
  CHECK(granted("api.example.com", 443, {"", true, {}}) == "api.example.com []");  // any port: no ports
  CHECK(granted("api.example.com", 443, {"API.Example.com", false, {}}) == "api.example.com [443]");
  CHECK(granted("api.example.com", 443, {"*.example.com", true, {}}) == "*.example.com []");
  CHECK(granted("a.b.example.com", 8443, {"*.b.example.com", false, {PortRange{8000, 9000}}}) == "*.b.example.com [\"8000-9000\"]");
  CHECK(granted("192.0.2.7", 80, {}) == "192.0.2.7 [80]");
  auto rule = grant_rule(target("api.example.com", 443), {});
  REQUIRE(rule.ok());
  CHECK(rule->name == "user");
  CHECK(rule->origin == RuleOrigin::kUser);
  CHECK(rule->action == Action::kAllow);
  CHECK(rule->schemes.empty());

  // Too wide, or not the asked host.
  CHECK(granted("api.example.com", 443, {"*", true, {}}).find("\"*\" would allow every host") != std::string::npos);
  CHECK(granted("api.example.com", 443, {"*.com", true, {}}).find("wider than the registrable domain of api.example.com (example.com)") !=
        std::string::npos);
  CHECK(granted("a.example.co.uk", 443, {"*.co.uk", true, {}}).find("wider than") != std::string::npos);
  CHECK(granted("me.github.io", 443, {"*.github.io", true, {}}).find("has no registrable domain") == std::string::npos);
  CHECK(granted("me.github.io", 443, {"*.github.io", true, {}}).find("wider than") != std::string::npos);
  CHECK(granted("api.example.com", 443, {"*.other.com", true, {}}).find("does not cover the asked host") != std::string::npos);
  CHECK(granted("api.example.com", 443, {"www.example.com", true, {}}).find("does not cover the asked host") != std::string::npos);
  CHECK(granted("example.com", 443, {"*.example.com", true, {}}).find("does not cover the asked host") != std::string::npos);
  CHECK(granted("192.0.2.7", 80, {"192.0.2.8", true, {}}).find("does not cover") != std::string::npos);
  CHECK(granted("api.example.com", 443, {"", false, {PortRange{80, 80}}}).find("does not include the asked port 443") != std::string::npos);
  CHECK(granted("api.example.com", 443, {"*.", true, {}}).rfind("error: scope.host", 0) == 0);
}

TEST_CASE("suggested scopes: this host and port, this host on any port, its registrable domain's subdomains") {
  auto json_of = [](const Target& t) {
    json out = json::array();
    for (const GrantScope& scope : suggested_scopes(t)) out.push_back(grant_scope_to_json(scope, t));
    return out;
  };
  CHECK(json_of(target("api.example.com", 443)) ==
        json::parse(R"([{"host":"api.example.com","ports":[443]},{"host":"api.example.com","ports":"any"},
                        {"host":"*.example.com","ports":"any"}])"));
  CHECK(json_of(target("example.com", 80)).size() == 2);  // "*.example.com" would not cover example.com
  CHECK(json_of(target("192.0.2.7", 8080)) == json::parse(R"([{"host":"192.0.2.7","ports":[8080]},{"host":"192.0.2.7","ports":"any"}])"));
  // Every suggestion is a valid grant for what was asked.
  for (const char* host : {"api.example.com", "a.b.example.co.uk", "me.github.io", "192.0.2.7"})
    for (const GrantScope& scope : suggested_scopes(target(host, 443))) CHECK(grant_rule(target(host, 443), scope).ok());
}

TEST_CASE("scopes read from JSON strictly") {
  auto scope = parse_grant_scope(json::parse(R"({"host":"*.example.com","ports":"any"})"), "scope");
  REQUIRE(scope.ok());
  CHECK(scope->host == "*.example.com");
  CHECK(scope->any_port);
  auto ports = parse_grant_scope(json::parse(R"({"ports":[443,"8000-8100"]})"), "scope");
  REQUIRE(ports.ok());
  CHECK(ports->host.empty());
  CHECK(ports->ports.size() == 2);
  CHECK(parse_grant_scope(json::parse(R"({"hosts":"x"})"), "scope").error().message.find("scope.hosts") != std::string::npos);
  CHECK_FALSE(parse_grant_scope(json::parse(R"({"ports":"all"})"), "scope").ok());
  CHECK_FALSE(parse_grant_scope(json::parse(R"({"host":""})"), "scope").ok());
  CHECK_FALSE(parse_grant_scope(json::parse(R"("*.example.com")"), "scope").ok());
}
