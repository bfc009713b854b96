// Policy JSON reading and writing; see policy_json.h.
#include "server/egress/policy/policy_json.h"

#include <charconv>

namespace lockroom::egress {

namespace {

Result<std::uint16_t> parse_port_number(std::string_view text, const std::string& path) {
  int port = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (ec != std::errc() || end != text.data() + text.size() || port < 1 || port > 65535) {
    return field_error(path, "\"" + std::string(text.substr(0, 40)) + "\" is not a port (1-65535)");
  }
  return static_cast<std::uint16_t>(port);
}

Result<PortRange> parse_port_entry(const json& entry, const std::string& path) {
  if (entry.is_number_integer()) {
    bool in_range = entry.is_number_unsigned() ? entry.get<std::uint64_t>() <= 65535
                                               : entry.get<std::int64_t>() >= 1 && entry.get<std::int64_t>() <= 65535;
    if (!in_range || entry.get<std::uint64_t>() == 0) return field_error(path, describe_json(entry) + " is not a port (1-65535)");
    auto port = static_cast<std::uint16_t>(entry.get<std::uint64_t>());
    return PortRange{port, port};
  }
  if (!entry.is_string()) return type_error(path, "a port number or a range string like \"8000-8100\"", entry);
  const std::string& text = entry.get_ref<const std::string&>();
  std::size_t dash = text.find('-');
  if (dash == std::string::npos) {
    Result<std::uint16_t> port = parse_port_number(text, path);
    if (!port) return port.error();
    return PortRange{*port, *port};
  }
  Result<std::uint16_t> first = parse_port_number(std::string_view(text).substr(0, dash), path);
  if (!first) return first.error();
  Result<std::uint16_t> last = parse_port_number(std::string_view(text).substr(dash + 1), path);
  if (!last) return last.error();
  if (*first > *last) return field_error(path, "range \"" + text + "\" ends before it starts");
  return PortRange{*first, *last};
}

Result<std::vector<Scheme>> parse_schemes(const json& value, const std::string& path) {
  std::vector<Scheme> schemes;
  auto one = [&](const json& item, const std::string& item_path) -> Result<void> {
    if (!item.is_string()) return type_error(item_path, "\"http\", \"https\", \"tcp\" or \"any\"", item);
    const std::string& text = item.get_ref<const std::string&>();
    if (text == "http") schemes.push_back(Scheme::kHttp);
    else if (text == "https") schemes.push_back(Scheme::kHttps);
    else if (text == "tcp") schemes.push_back(Scheme::kTcp);
    else if (text == "any") schemes.insert(schemes.end(), {Scheme::kHttp, Scheme::kHttps, Scheme::kTcp});
    else return field_error(item_path, "\"" + text.substr(0, 40) + "\" is not a scheme (http, https, tcp or any)");
    return {};
  };
  if (value.is_array()) {
    if (value.empty()) return field_error(path, "is an empty list; leave \"schemes\" out to mean any scheme");
    if (value.size() > 8) return field_error(path, "has more than 8 entries");
    for (std::size_t i = 0; i < value.size(); ++i) {
      Result<void> r = one(value[i], path + "[" + std::to_string(i) + "]");
      if (!r) return r.error();
    }
  } else {
    Result<void> r = one(value, path);
    if (!r) return r.error();
  }
  return schemes;
}

Result<std::vector<HostPattern>> parse_patterns(const json& value, const std::string& path) {
  if (!value.is_array()) return type_error(path, "a list of host patterns", value);
  if (value.size() > kMaxRules) return field_error(path, "has more than " + std::to_string(kMaxRules) + " entries");
  std::vector<HostPattern> patterns;
  for (std::size_t i = 0; i < value.size(); ++i) {
    std::string item_path = path + "[" + std::to_string(i) + "]";
    if (!value[i].is_string()) return type_error(item_path, "a host pattern string", value[i]);
    Result<HostPattern> pattern = parse_host_pattern(value[i].get_ref<const std::string&>());
    if (!pattern) return field_error(item_path, pattern.error().message);
    patterns.push_back(std::move(*pattern));
  }
  return patterns;
}

}  // namespace

Result<std::vector<PortRange>> parse_ports(const json& value, const std::string& path) {
  std::vector<PortRange> ports;
  if (!value.is_array()) {
    Result<PortRange> one = parse_port_entry(value, path);
    if (!one) return one.error();
    ports.push_back(*one);
    return ports;
  }
  if (value.empty()) return field_error(path, "is an empty list; leave \"ports\" out to mean any port");
  if (value.size() > kMaxPortEntries) {
    return field_error(path, "has " + std::to_string(value.size()) + " entries; the limit is " + std::to_string(kMaxPortEntries));
  }
  for (std::size_t i = 0; i < value.size(); ++i) {
    Result<PortRange> entry = parse_port_entry(value[i], path + "[" + std::to_string(i) + "]");
    if (!entry) return entry.error();
    ports.push_back(*entry);
  }
  return ports;
}

json ports_to_json(const std::vector<PortRange>& ports) {
  json out = json::array();
  for (const PortRange& range : ports) {
    if (range.first == range.last) out.push_back(range.first);
    else out.push_back(std::to_string(range.first) + "-" + std::to_string(range.last));
  }
  return out;
}

Result<Rule> parse_rule(const json& value, const std::string& path) {
  if (!value.is_object()) return type_error(path, "an object", value);
  Result<void> known = reject_unknown_fields(value, {"action", "host", "ports", "schemes", "name", "origin"}, path);
  if (!known) return known.error();
  Rule rule;

  auto action = value.find("action");
  if (action == value.end()) return field_error(path + ".action", "is required (\"allow\" or \"deny\")");
  if (*action == "allow") rule.action = Action::kAllow;
  else if (*action == "deny") rule.action = Action::kDeny;
  else return field_error(path + ".action", "must be \"allow\" or \"deny\", got " + describe_json(*action));

  auto host = value.find("host");
  if (host == value.end()) return field_error(path + ".host", "is required");
  if (!host->is_string()) return type_error(path + ".host", "a host pattern string", *host);
  Result<HostPattern> pattern = parse_host_pattern(host->get_ref<const std::string&>());
  if (!pattern) return field_error(path + ".host", pattern.error().message);
  rule.host = std::move(*pattern);

  if (auto ports = value.find("ports"); ports != value.end()) {
    Result<std::vector<PortRange>> parsed = parse_ports(*ports, path + ".ports");
    if (!parsed) return parsed.error();
    rule.ports = std::move(*parsed);
  }
  if (auto schemes = value.find("schemes"); schemes != value.end()) {
    Result<std::vector<Scheme>> parsed = parse_schemes(*schemes, path + ".schemes");
    if (!parsed) return parsed.error();
    if (parsed->size() < 3) rule.schemes = std::move(*parsed);  // all three is the same as any
  }
  if (auto name = value.find("name"); name != value.end()) {
    if (!name->is_string()) return type_error(path + ".name", "a string", *name);
    const std::string& text = name->get_ref<const std::string&>();
    if (text.empty() || text.size() > 128) return field_error(path + ".name", "must be 1-128 characters");
    for (char c : text) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return field_error(path + ".name", "has a control character");
    }
    rule.name = text;
  }
  if (auto origin = value.find("origin"); origin != value.end()) {
    if (*origin == "default") rule.origin = RuleOrigin::kDefault;
    else if (*origin == "user") rule.origin = RuleOrigin::kUser;
    else if (*origin == "policy") rule.origin = RuleOrigin::kPolicy;
    else return field_error(path + ".origin", "must be \"policy\", \"default\" or \"user\", got " + describe_json(*origin));
  }
  return rule;
}

Result<Policy> parse_policy(const json& value, const std::string& path) {
  if (!value.is_object()) return type_error(path, "an object", value);
  Result<void> known = reject_unknown_fields(value, {"rules", "inspect", "unmatched", "defaultAllow"}, path);
  if (!known) return known.error();
  Policy policy;
  if (auto rules = value.find("rules"); rules != value.end()) {
    if (!rules->is_array()) return type_error(path + ".rules", "a list of rules", *rules);
    if (rules->size() > kMaxRules) {
      return field_error(path + ".rules", "has " + std::to_string(rules->size()) + " rules; the limit is " + std::to_string(kMaxRules));
    }
    for (std::size_t i = 0; i < rules->size(); ++i) {
      Result<Rule> rule = parse_rule((*rules)[i], path + ".rules[" + std::to_string(i) + "]");
      if (!rule) return rule.error();
      policy.rules.push_back(std::move(*rule));
    }
  }
  if (auto inspect = value.find("inspect"); inspect != value.end()) {
    Result<std::vector<HostPattern>> patterns = parse_patterns(*inspect, path + ".inspect");
    if (!patterns) return patterns.error();
    policy.inspect = std::move(*patterns);
  }
  if (auto unmatched = value.find("unmatched"); unmatched != value.end()) {
    if (*unmatched == "deny") policy.when_unmatched = WhenUnmatched::kDeny;
    else if (*unmatched == "ask") policy.when_unmatched = WhenUnmatched::kAsk;
    else return field_error(path + ".unmatched", "must be \"deny\" or \"ask\", got " + describe_json(*unmatched));
  }
  if (auto defaults = value.find("defaultAllow"); defaults != value.end()) {
    if (!defaults->is_boolean()) return type_error(path + ".defaultAllow", "true or false", *defaults);
    policy.use_default_allow = defaults->get<bool>();
  }
  return policy;
}

json policy_to_json(const Policy& policy) {
  json rules = json::array();
  for (const Rule& rule : policy.rules) {
    json r = {{"action", rule.action == Action::kAllow ? "allow" : "deny"}, {"host", rule.host.text()}};
    if (!rule.ports.empty()) r["ports"] = ports_to_json(rule.ports);
    if (!rule.schemes.empty()) {
      json schemes = json::array();
      for (Scheme s : rule.schemes) schemes.push_back(scheme_name(s));
      r["schemes"] = std::move(schemes);
    }
    if (!rule.name.empty()) r["name"] = rule.name;
    if (rule.origin != RuleOrigin::kPolicy) r["origin"] = rule_origin_name(rule.origin);
    rules.push_back(std::move(r));
  }
  json inspect = json::array();
  for (const HostPattern& pattern : policy.inspect) inspect.push_back(pattern.text());
  return {{"rules", std::move(rules)},
          {"inspect", std::move(inspect)},
          {"unmatched", policy.when_unmatched == WhenUnmatched::kAsk ? "ask" : "deny"},
          {"defaultAllow", policy.use_default_allow}};
}

}  // namespace lockroom::egress
