// Resolving and merging kits; see kit_plan.h.
#include "server/kits/kit_plan.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "server/egress/policy/policy_json.h"
#include "server/kits/npm_spec.h"

namespace lockroom::kits {

namespace {

const char* user_name(KitUser user) { return user == KitUser::kRoot ? "root" : "agent"; }

template <typename T>
void append_unique(std::vector<T>& to, const std::vector<T>& from) {
  for (const auto& item : from)
    if (std::find(to.begin(), to.end(), item) == to.end()) to.push_back(item);
}

void take_max(std::optional<int>& to, const std::optional<int>& from) {
  if (from && (!to || *from > *to)) to = from;
}

json secret_json(const egress::Secret& s) {
  json hosts = json::array();
  for (const auto& h : s.hosts) hosts.push_back(h.text());
  return json{{"name", s.name}, {"sentinel", s.sentinel()}, {"hosts", hosts}};
}

}  // namespace

Result<KitPlan> merge_kits(const std::vector<KitSpec>& ordered) {
  KitPlan plan;
  std::map<std::string, std::string> service_owner;
  std::map<std::string, std::string> secret_owner;
  std::map<std::string, std::string> npm_owner;
  for (const KitSpec& kit : ordered) {
    plan.kits.push_back(kit.name);
    append_unique(plan.packages, kit.packages);
    for (const auto& spec : kit.npm) {
      auto name = npm_spec_name(spec);
      auto other = std::find_if(plan.npm.begin(), plan.npm.end(), [&](const std::string& x) { return name && npm_spec_name(x) == name; });
      if (other != plan.npm.end() && *other != spec)
        return make_error(ErrorCode::kInvalidInput, "kits \"" + npm_owner[*other] + "\" and \"" + kit.name + "\" ask for different versions of the npm package \"" +
                                                        *name + "\" (\"" + *other + "\" and \"" + spec + "\"); keep one");
      if (std::find(plan.npm.begin(), plan.npm.end(), spec) == plan.npm.end()) {
        plan.npm.push_back(spec);
        npm_owner[spec] = kit.name;
      }
    }
    for (const auto& [k, v] : kit.env) plan.env[k] = v;
    for (const auto& f : kit.files) {
      auto same = std::find_if(plan.files.begin(), plan.files.end(), [&](const KitFile& x) { return x.path == f.path; });
      if (same != plan.files.end()) *same = f;
      else plan.files.push_back(f);
    }
    for (auto command : kit.setup) {
      command.kit = kit.name;
      plan.setup.push_back(std::move(command));
    }
    for (const auto& s : kit.services) {
      if (auto it = service_owner.find(s.name); it != service_owner.end())
        return make_error(ErrorCode::kInvalidInput, "kits \"" + it->second + "\" and \"" + kit.name + "\" both define the service \"" + s.name + "\"");
      service_owner[s.name] = kit.name;
      plan.services.push_back(s);
      plan.services.back().kit = kit.name;
    }
    if (kit.network) {
      if (!plan.network) {
        plan.network = kit.network;
      } else {
        egress::Policy& p = *plan.network;
        p.rules.insert(p.rules.end(), kit.network->rules.begin(), kit.network->rules.end());
        p.inspect.insert(p.inspect.end(), kit.network->inspect.begin(), kit.network->inspect.end());
        if (kit.network->when_unmatched == egress::WhenUnmatched::kAsk) p.when_unmatched = egress::WhenUnmatched::kAsk;
        p.use_default_allow = p.use_default_allow && kit.network->use_default_allow;
      }
      if (plan.network->rules.size() > egress::kMaxRules)
        return make_error(ErrorCode::kInvalidInput, "the kits together have more than " + std::to_string(egress::kMaxRules) + " network rules");
    }
    for (const auto& s : kit.secrets) {
      auto same = std::find_if(plan.secrets.begin(), plan.secrets.end(), [&](const egress::Secret& x) { return x.sentinel() == s.sentinel(); });
      if (same == plan.secrets.end()) {
        plan.secrets.push_back(s);
        secret_owner[s.sentinel()] = kit.name;
      } else if (!(*same == s)) {
        return make_error(ErrorCode::kInvalidInput, "kits \"" + secret_owner[s.sentinel()] + "\" and \"" + kit.name +
                                                        "\" define the secret \"" + s.name + "\" differently; keep one definition");
      }
    }
    if (plan.secrets.size() > egress::kMaxSecrets)
      return make_error(ErrorCode::kInvalidInput, "the kits together have more than " + std::to_string(egress::kMaxSecrets) + " secrets");
    append_unique(plan.withhold, kit.withhold);
    append_unique(plan.allow, kit.allow);
    take_max(plan.resources.cpus, kit.resources.cpus);
    take_max(plan.resources.memory_mib, kit.resources.memory_mib);
    take_max(plan.resources.disk_mib, kit.resources.disk_mib);
    take_max(plan.resources.timeout_seconds, kit.resources.timeout_seconds);
  }
  return plan;
}

Result<KitPlan> resolve_kits(const KitCatalog& catalog, const std::vector<std::string>& refs) {
  std::vector<KitSpec> ordered;
  std::set<std::string> done;           // kit names already placed
  std::vector<std::string> visiting;    // the chain being loaded, for cycle messages
  std::function<Result<void>(const std::string&)> visit = [&](const std::string& ref) -> Result<void> {
    auto kit = catalog.load(ref);
    if (!kit) return kit.error();
    if (done.count(kit->name)) return {};
    if (std::find(visiting.begin(), visiting.end(), kit->name) != visiting.end()) {
      std::string chain;
      for (const auto& v : visiting) chain += v + " -> ";
      return make_error(ErrorCode::kInvalidInput, "kits extend each other in a cycle: " + chain + kit->name);
    }
    if (visiting.size() >= kMaxKitsInStack)
      return make_error(ErrorCode::kInvalidInput, "kits extend each other more than " + std::to_string(kMaxKitsInStack) + " levels deep");
    visiting.push_back(kit->name);
    for (const auto& parent : kit->extends)
      if (auto r = visit(parent); !r) return make_error(r.error().code, r.error().message + " (extended by " + kit->source + ")");
    visiting.pop_back();
    done.insert(kit->name);
    ordered.push_back(std::move(*kit));
    if (ordered.size() > kMaxKitsInStack)
      return make_error(ErrorCode::kInvalidInput, "more than " + std::to_string(kMaxKitsInStack) + " kits in one sandbox");
    return {};
  };
  for (const auto& ref : refs)
    if (auto r = visit(ref); !r) return r.error();
  return merge_kits(ordered);
}

json plan_to_json(const KitPlan& plan) {
  json files = json::array();
  for (const auto& f : plan.files) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", f.mode);
    files.push_back({{"path", f.path}, {"bytes", f.content.size()}, {"mode", mode}, {"user", user_name(f.user)}});
  }
  json setup = json::array();
  for (const auto& c : plan.setup) setup.push_back({{"run", c.run}, {"cwd", c.cwd}, {"timeoutSeconds", c.timeout_seconds}, {"user", user_name(c.user)}, {"kit", c.kit}});
  json services = json::array();
  for (const auto& s : plan.services) services.push_back({{"name", s.name}, {"run", s.run}, {"cwd", s.cwd}, {"user", user_name(s.user)}, {"kit", s.kit}});
  json secrets = json::array();
  for (const auto& s : plan.secrets) secrets.push_back(secret_json(s));
  json resources = json::object();
  if (plan.resources.cpus) resources["cpus"] = *plan.resources.cpus;
  if (plan.resources.memory_mib) resources["memoryMiB"] = *plan.resources.memory_mib;
  if (plan.resources.disk_mib) resources["diskMiB"] = *plan.resources.disk_mib;
  if (plan.resources.timeout_seconds) resources["timeoutSeconds"] = *plan.resources.timeout_seconds;
  json out{{"kits", plan.kits},           {"packages", plan.packages}, {"npm", plan.npm}, {"env", plan.env},
           {"files", files},              {"setup", setup},            {"services", services},
           {"secrets", secrets},          {"workspace", {{"withhold", plan.withhold}, {"allow", plan.allow}}},
           {"resources", resources}};
  out["network"] = plan.network ? egress::policy_to_json(*plan.network) : json(nullptr);
  return out;
}

}  // namespace lockroom::kits
