// plan_of(): kit files given as YAML text, parsed and merged into a KitPlan (each must be valid).
#pragma once

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "server/kits/kit_plan.h"

namespace lockroom::testing {

inline kits::KitPlan plan_of(const std::vector<std::string>& yamls) {
  std::vector<kits::KitSpec> specs;
  for (const auto& y : yamls) {
    auto k = kits::parse_kit(y, "kit.yaml");
    INFO((k ? "" : k.error().message));
    REQUIRE(k);
    specs.push_back(*k);
  }
  auto plan = kits::merge_kits(specs);
  REQUIRE(plan);
  return *plan;
}

}  // namespace lockroom::testing
