// Kit plans applied to create requests (server/core/kit_request.*). Pure.
#include <catch2/catch.hpp>

#include "server/core/kit_request.h"
#include "server/egress/policy/policy_json.h"
#include "server/kits/kit_plan.h"

using namespace lockroom;

namespace {

kits::KitSpec kit(const std::string& yaml) {
  auto k = kits::parse_kit(yaml, "kit.yaml");
  INFO((k ? "" : k.error().message));
  REQUIRE(k);
  return *k;
}

core::CreateRequest request_with_network() {
  core::CreateRequest r;
  r.network = core::NetworkRequest{};
  return r;
}

}  // namespace

TEST_CASE("the request has the last word on env and can only raise resources", "[kits][core]") {
  auto plan = kits::merge_kits({kit("name: a\nenv: {A: kit, B: kit}\nresources: {memoryMiB: 1024, cpus: 2}\n")});
  REQUIRE(plan);
  core::CreateRequest r;
  r.env = {{"B", "request"}};
  r.resources.memory_mib = 2048;
  r.resources.cpus = 1;
  REQUIRE(core::apply_kit_plan(*plan, r));
  CHECK(r.env.at("A") == "kit");
  CHECK(r.env.at("B") == "request");
  CHECK(r.resources.memory_mib == 2048);
  CHECK(r.resources.cpus == 2);
  CHECK_FALSE(r.resources.disk_mib);
}

TEST_CASE("kit rules come first, the default allow list only when nobody turns it off", "[kits][core]") {
  auto plan = kits::merge_kits({kit("name: a\nnetwork: {rules: [{action: allow, host: a.example, name: from-kit}], defaultAllow: false}\n")});
  REQUIRE(plan);
  core::CreateRequest r = request_with_network();
  auto rule = egress::parse_rule({{"action", "deny"}, {"host", "b.example"}, {"name", "from-request"}}, "r");
  REQUIRE(rule);
  r.network->policy.rules.push_back(*rule);
  REQUIRE(core::apply_kit_plan(*plan, r));
  core::finish_network(r);
  REQUIRE(r.network->policy.rules.size() == 2);  // no default list added
  CHECK(r.network->policy.rules[0].name == "from-kit");
  CHECK(r.network->policy.rules[1].name == "from-request");

  auto open = kits::merge_kits({kit("name: b\nnetwork: {rules: [{action: allow, host: a.example}]}\n")});
  REQUIRE(open);
  core::CreateRequest r2 = request_with_network();
  REQUIRE(core::apply_kit_plan(*open, r2));
  core::finish_network(r2);
  CHECK(r2.network->policy.rules.size() > 1);  // the default allow list was added after the kit's rule
}

TEST_CASE("a request without network stays without, and secrets defined twice differently are refused", "[kits][core]") {
  auto plan = kits::merge_kits({kit("name: a\nnetwork: {rules: [{action: allow, host: '*'}]}\n"
                                    "secrets: [{name: tok, from: {env: TOK}, hosts: [a.example]}]\n")});
  REQUIRE(plan);
  core::CreateRequest offline;
  REQUIRE(core::apply_kit_plan(*plan, offline));
  CHECK_FALSE(offline.network);

  core::CreateRequest r = request_with_network();
  auto other = egress::parse_secret({{"name", "tok"}, {"from", {{"env", "OTHER"}}}, {"hosts", {"a.example"}}}, "secrets[0]");
  REQUIRE(other);
  r.network->secrets.push_back(*other);
  auto clash = core::apply_kit_plan(*plan, r);
  REQUIRE_FALSE(clash);
  CHECK(clash.error().message.find("\"tok\" is defined by a kit and differently by the request") != std::string::npos);
}

TEST_CASE("kit workspace patterns are added to the request's", "[kits][core]") {
  auto plan = kits::merge_kits({kit("name: a\nworkspace: {withhold: ['*.pem'], allow: [.env.example]}\n")});
  REQUIRE(plan);
  core::CreateRequest r;
  r.workspace = core::WorkspaceRequest{"/somewhere", {}, {}};
  r.workspace->secrets.withhold = {"*.key"};
  REQUIRE(core::apply_kit_plan(*plan, r));
  CHECK(r.workspace->secrets.withhold == std::vector<std::string>{"*.key", "*.pem"});
  CHECK(r.workspace->secrets.allow == std::vector<std::string>{".env.example"});
}
