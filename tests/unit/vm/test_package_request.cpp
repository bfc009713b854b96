// Kits' Debian packages on their way to a sandbox (core/kit_request.h): a plan with packages is
// supported now, and its packages join the request's as one sorted set the manager builds a
// package image for.
#include <catch2/catch.hpp>

#include "server/core/kit_request.h"
#include "tests/support/kit_plan_of.h"

using namespace lockroom;
using lockroom::testing::plan_of;

TEST_CASE("kit packages: accepted, merged with the request's into one sorted set", "[kits][packages]") {
  auto plan = plan_of({"name: py\npackages: [python3, jq]\n", "name: tools\nextends: py\npackages: [jq, curl]\n"});
  CHECK(core::check_kit_plan_supported(plan).ok());
  core::CreateRequest request;
  request.packages = {"zstd", "curl"};
  REQUIRE(core::apply_kit_plan(plan, request).ok());
  CHECK(request.packages == std::vector<std::string>{"curl", "jq", "python3", "zstd"});

  core::CreateRequest none;
  REQUIRE(core::apply_kit_plan(plan_of({"name: plain\nenv: {A: b}\n"}), none).ok());
  CHECK(none.packages.empty());
}

TEST_CASE("kit packages: a set the package image cannot take is refused before anything starts", "[kits][packages]") {
  kits::KitPlan plan;
  plan.packages = {"jq", "Not_A_Package"};  // kit files cannot say this; a plan made in code can
  auto supported = core::check_kit_plan_supported(plan);
  REQUIRE_FALSE(supported.ok());
  CHECK_THAT(supported.error().message, Catch::Contains("\"Not_A_Package\""));
  core::CreateRequest request;
  CHECK_FALSE(core::apply_kit_plan(plan, request).ok());
}

TEST_CASE("kit npm: the kits' specs join the request's as one sorted set; two versions of one package are refused", "[kits][npm]") {
  auto plan = plan_of({"name: agent\npackages: [nodejs]\nnpm: [\"@zed-industries/claude-agent-acp@0.23.1\", \"b@1.0.0\"]\n"});
  CHECK(core::check_kit_plan_supported(plan).ok());
  core::CreateRequest request;
  request.npm = {"a@2.0.0"};
  REQUIRE(core::apply_kit_plan(plan, request).ok());
  CHECK(request.npm == std::vector<std::string>{"@zed-industries/claude-agent-acp@0.23.1", "a@2.0.0", "b@1.0.0"});
  CHECK(request.packages == std::vector<std::string>{"nodejs"});

  core::CreateRequest clash;
  clash.npm = {"b@2.0.0"};
  auto refused = core::apply_kit_plan(plan, clash);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message, Catch::Contains("\"b\" is asked for twice"));

  kits::KitPlan made;
  made.npm = {"--registry=http://elsewhere"};  // kit files cannot say this; a plan made in code can
  CHECK_FALSE(core::check_kit_plan_supported(made).ok());
}
