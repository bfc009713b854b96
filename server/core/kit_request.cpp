// Kit plans into create requests; see kit_request.h.
#include "server/core/kit_request.h"

#include <algorithm>

#include "server/egress/policy/policy_json.h"
#include "server/kits/npm_spec.h"
#include "server/vm/image/package_closure.h"

namespace lockroom::core {

egress::Policy merge_policies(egress::Policy first, const egress::Policy& then) {
  first.rules.insert(first.rules.end(), then.rules.begin(), then.rules.end());
  first.inspect.insert(first.inspect.end(), then.inspect.begin(), then.inspect.end());
  if (then.when_unmatched == egress::WhenUnmatched::kAsk) first.when_unmatched = egress::WhenUnmatched::kAsk;
  first.use_default_allow = first.use_default_allow && then.use_default_allow;
  return first;
}

Result<void> apply_kit_plan(const kits::KitPlan& plan, CreateRequest& request) {
  std::map<std::string, std::string> env = plan.env;
  for (const auto& [k, v] : request.env) env[k] = v;
  request.env = std::move(env);

  auto raise = [](std::optional<std::int64_t>& value, const std::optional<int>& least) {
    if (least && (!value || *value < *least)) value = *least;
  };
  raise(request.resources.cpus, plan.resources.cpus);
  raise(request.resources.memory_mib, plan.resources.memory_mib);
  raise(request.resources.disk_mib, plan.resources.disk_mib);
  raise(request.resources.lifetime_seconds, plan.resources.timeout_seconds);

  if (request.network) {
    if (plan.network) request.network->policy = merge_policies(*plan.network, request.network->policy);
    if (request.network->policy.rules.size() > egress::kMaxRules)
      return make_error(ErrorCode::kInvalidInput, "the kits and the request together have more than " + std::to_string(egress::kMaxRules) + " network rules");
    auto& secrets = request.network->secrets;
    for (const auto& s : plan.secrets) {
      auto same = std::find_if(secrets.begin(), secrets.end(), [&](const egress::Secret& x) { return x.sentinel() == s.sentinel(); });
      if (same == secrets.end()) secrets.push_back(s);
      else if (!(*same == s))
        return make_error(ErrorCode::kInvalidInput, "the secret \"" + s.name + "\" is defined by a kit and differently by the request; keep one definition");
    }
    if (secrets.size() > egress::kMaxSecrets)
      return make_error(ErrorCode::kInvalidInput, "the kits and the request together have more than " + std::to_string(egress::kMaxSecrets) + " secrets");
  }

  auto packages = vm::image::normalize_package_set(plan.packages);
  if (!packages) return packages.error();
  request.packages.insert(request.packages.end(), packages->begin(), packages->end());
  auto all = vm::image::normalize_package_set(std::move(request.packages));
  if (!all) return all.error();
  request.packages = std::move(*all);

  request.npm.insert(request.npm.end(), plan.npm.begin(), plan.npm.end());
  auto npm = kits::normalize_npm_set(std::move(request.npm));
  if (!npm) return npm.error();
  request.npm = std::move(*npm);

  if (request.workspace) {
    auto add = [](std::vector<std::string>& to, const std::vector<std::string>& from) {
      for (const auto& p : from)
        if (std::find(to.begin(), to.end(), p) == to.end()) to.push_back(p);
    };
    add(request.workspace->secrets.withhold, plan.withhold);
    add(request.workspace->secrets.allow, plan.allow);
  }
  return {};
}

Result<void> check_kit_plan_supported(const kits::KitPlan& plan) {
  // Packages become a package image (vm/image/package_image.h); the set must be one it can take.
  if (auto packages = vm::image::normalize_package_set(plan.packages); !packages) return packages.error();
  // npm specs become an npm layer on that image (vm/image/npm_image.h); the set must be one npm can take.
  if (auto npm = kits::normalize_npm_set(plan.npm); !npm) return npm.error();
  return {};
}

void finish_network(CreateRequest& request) {
  if (request.network) request.network->policy = egress::with_default_allow(std::move(request.network->policy), SandboxNetwork::default_allow());
}

}  // namespace lockroom::core
