// KitPlan: a stack of kits resolved and merged into what a sandbox needs.
//
// resolve_kits() loads the kits asked for and everything they extend, each once, dependencies
// first (a cycle is an error naming it), and merges them in that order:
//   packages, workspace patterns    union, in order
//   npm                             union, in order; two versions of one package is an error
//   env, files                      a later kit overrides an earlier one (same name / path)
//   setup                           concatenated, in order
//   services                        union; one name defined by two kits is an error
//   network                         rules and inspect lists concatenated (deny still wins);
//                                   "ask" when any kit asks; the default allow list only if no
//                                   kit turns it off
//   secrets                         union by name; one name defined differently is an error
//   resources                       the largest each kit asks for
// Pure apart from the catalog's file reads.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "server/kits/kit_catalog.h"
#include "server/kits/kit_spec.h"

namespace lockroom::kits {

struct KitPlan {
  std::vector<std::string> kits;  // names in the order they were applied
  std::vector<std::string> packages;
  std::vector<std::string> npm;
  std::map<std::string, std::string> env;
  std::vector<KitFile> files;
  std::vector<KitCommand> setup;
  std::vector<KitService> services;
  std::optional<egress::Policy> network;
  std::vector<egress::Secret> secrets;
  std::vector<std::string> withhold;
  std::vector<std::string> allow;
  KitResources resources;

  bool empty() const { return kits.empty(); }
};

constexpr std::size_t kMaxKitsInStack = 32;

// Merges already-loaded kits in the given order (no lookups).
Result<KitPlan> merge_kits(const std::vector<KitSpec>& ordered);
// Loads `refs` and what they extend from `catalog`, orders them and merges them.
Result<KitPlan> resolve_kits(const KitCatalog& catalog, const std::vector<std::string>& refs);

// The plan as JSON (for `lockroom kit show` and kit/validate answers).
json plan_to_json(const KitPlan& plan);

}  // namespace lockroom::kits
