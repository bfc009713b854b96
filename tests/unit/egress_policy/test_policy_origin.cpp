// Rule origins (rules.h): the default allow list and the user's grants are marked when a policy
// is written out, and a policy read with network/policy and written back unchanged does not
// grow: with_default_allow drops every rule marked "default" before adding the list again.
#include <catch2/catch.hpp>

#include "server/egress/policy/policy_json.h"
#include "server/egress/policy/rules.h"

using namespace lockroom::egress;

namespace {

std::vector<Rule> defaults() {
  Rule git;
  git.host = *parse_host_pattern("github.com");
  git.ports = {PortRange{443, 443}};
  git.name = "github";
  Rule npm;
  npm.host = *parse_host_pattern("registry.npmjs.org");
  npm.name = "npm";
  return {git, npm};
}

Policy read(const json& value) {
  auto policy = parse_policy(value, "policy");
  INFO((policy.ok() ? std::string() : policy.error().message));
  REQUIRE(policy.ok());
  return *policy;
}

}  // namespace

TEST_CASE("the default allow list and grants are marked; reading and writing back does not duplicate them") {
  Policy policy = with_default_allow(read(json::parse(R"({"rules":[{"action":"allow","host":"example.org","name":"mine"}]})")), defaults());
  Rule grant;
  grant.host = *parse_host_pattern("*.example.com");
  grant.name = "user";
  grant.origin = RuleOrigin::kUser;
  policy.rules.insert(policy.rules.begin(), grant);

  json written = policy_to_json(policy);
  REQUIRE(written["rules"].size() == 4);
  CHECK(written["rules"][0]["origin"] == "user");
  CHECK_FALSE(written["rules"][1].contains("origin"));  // the request's own rule
  CHECK(written["rules"][2]["origin"] == "default");
  CHECK(written["rules"][3]["origin"] == "default");

  // Written back as it was read (what an editor's settings page does): the same policy.
  Policy again = with_default_allow(read(written), defaults());
  CHECK(again == policy);
  CHECK(policy_to_json(again) == written);
  // Twice more, still the same: nothing accumulates.
  CHECK(with_default_allow(read(policy_to_json(again)), defaults()) == policy);

  // The list on this host changed meanwhile: the marked rules are replaced, not kept.
  std::vector<Rule> fewer = {defaults()[0]};
  Policy refreshed = with_default_allow(read(written), fewer);
  CHECK(refreshed.rules.size() == 3);

  // defaultAllow false drops the marked rules whatever came; a user's grant stays.
  json without = written;
  without["defaultAllow"] = false;
  Policy off = with_default_allow(read(without), defaults());
  REQUIRE(off.rules.size() == 2);
  CHECK(off.rules[0].origin == RuleOrigin::kUser);
  CHECK(off.rules[1].name == "mine");

  // An origin that is none of the three is an error naming the field.
  auto bad = parse_policy(json::parse(R"({"rules":[{"action":"allow","host":"x.org","origin":"kit"}]})"), "policy");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("policy.rules[0].origin") != std::string::npos);
}
