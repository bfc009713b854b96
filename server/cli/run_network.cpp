// `lockroom run`'s network policy and denied-attempts summary; see run_network.h.
#include "server/cli/run_network.h"

#include <fstream>
#include <iostream>
#include <map>

#include "server/egress/policy/audit.h"
#include "server/egress/policy/policy_json.h"

namespace lockroom::cli {

Result<core::NetworkRequest> network_request(const std::vector<std::string>& allow) {
  egress::Policy policy;
  for (const auto& item : allow) {
    nlohmann::json rule{{"action", "allow"}, {"name", "--allow " + item}};
    auto colon = item.rfind(':');
    bool bracketed_v6 = !item.empty() && item.front() == '[';
    if (colon != std::string::npos && (item.find(':') == colon || bracketed_v6) && colon + 1 < item.size()) {
      rule["host"] = item.substr(0, colon);
      rule["ports"] = nlohmann::json::array({item.substr(colon + 1)});
    } else {
      rule["host"] = item;
    }
    auto parsed = egress::parse_rule(rule, "--allow " + item);
    if (!parsed) return parsed.error();
    policy.rules.push_back(std::move(*parsed));
  }
  core::NetworkRequest request;
  request.policy = std::move(policy);  // kits and the default allow list are added by the caller (core/kit_request.h)
  return request;
}

void print_denied_summary(const std::filesystem::path& audit_log) {
  std::ifstream in(audit_log);
  std::map<std::string, int> denied;
  std::string line;
  int total = 0;
  while (std::getline(in, line)) {
    auto record = egress::parse_audit_line(line);
    if (!record || record->decision == "allow") continue;
    std::string what = record->host + ":" + std::to_string(record->port) + " (" +
                       (record->decision == "block" ? "blocked: " + record->reason : "rule " + record->rule) + ")";
    denied[what]++;
    total++;
  }
  if (!total) return;
  std::cerr << "lockroom: " << total << " connection" << (total == 1 ? " was" : "s were") << " denied:";
  int shown = 0;
  for (const auto& [what, count] : denied) {
    if (shown++ == 8) {
      std::cerr << " and " << denied.size() - 8 << " more";
      break;
    }
    std::cerr << (shown > 1 ? "," : "") << " " << what << (count > 1 ? " x" + std::to_string(count) : "");
  }
  std::cerr << "\nlockroom: allow a host with --allow HOST[:PORT]; every decision is in " << audit_log.string() << std::endl;
}

}  // namespace lockroom::cli
