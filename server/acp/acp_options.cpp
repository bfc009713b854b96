// create_params; see acp_options.h.
#include "server/acp/acp_options.h"

#include <filesystem>

namespace lockroom::acp {

using protocol::json;

namespace {

// "HOST" or "HOST:PORT"; "[v6]:PORT" for an IPv6 address with a port.
json allow_rule(const std::string& spec) {
  json rule{{"action", "allow"}, {"name", "--allow"}};
  std::size_t colon = std::string::npos;
  if (!spec.empty() && spec[0] == '[') {
    auto close = spec.find(']');
    if (close != std::string::npos && close + 1 < spec.size() && spec[close + 1] == ':') colon = close + 1;
  } else if (spec.find(':') == spec.rfind(':')) {
    colon = spec.find(':');
  }
  bool numeric = colon != std::string::npos && colon + 1 < spec.size() && spec.size() - colon <= 6 &&
                 spec.find_first_not_of("0123456789", colon + 1) == std::string::npos;
  if (numeric) {
    rule["host"] = spec.substr(0, colon);
    rule["ports"] = json::array({std::stoi(spec.substr(colon + 1))});
  } else {
    rule["host"] = spec;
  }
  return rule;
}

}  // namespace

json create_params(const AcpOptions& options, const std::string* cwd) {
  json p = json::object();
  if (cwd) p["workspace"] = json{{"path", *cwd}};
  if (!options.kits.empty()) p["kits"] = options.kits;
  if (!options.env.empty()) p["env"] = options.env;
  json resources = options.resources;
  if (!resources.contains("timeoutSeconds")) resources["timeoutSeconds"] = 7 * 24 * 3600;  // a session lives as long as the editor keeps it
  p["resources"] = resources;
  std::string agent = options.argv.empty() ? "agent" : std::filesystem::path(options.argv[0]).filename().string();
  p["label"] = "acp: " + agent + (cwd ? " in " + std::filesystem::path(*cwd).filename().string() : std::string(" (probe)"));
  if (options.no_network) {
    p["network"] = false;
  } else {
    json rules = json::array();
    for (const auto& host : options.allow) rules.push_back(allow_rule(host));
    p["network"] = json{{"rules", rules}, {"unmatched", options.ask ? "ask" : "deny"}};
    json secrets = json::array();
    for (const auto& spec : options.secrets) {
      auto eq = spec.find('=');
      std::string name = spec.substr(0, eq);
      json hosts = json::array();
      if (eq != std::string::npos) {
        std::string list = spec.substr(eq + 1);
        for (std::size_t pos = 0; pos <= list.size();) {
          auto comma = list.find(',', pos);
          std::string host = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
          if (!host.empty()) hosts.push_back(host);
          if (comma == std::string::npos) break;
          pos = comma + 1;
        }
      }
      secrets.push_back(json{{"name", name}, {"from", {{"env", name}}}, {"hosts", hosts}, {"inject", "sentinel"}});
    }
    if (!secrets.empty()) p["secrets"] = secrets;
  }
  return p;
}

}  // namespace lockroom::acp
