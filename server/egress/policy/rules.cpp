// Rule matching and decisions; see rules.h.
#include "server/egress/policy/rules.h"

namespace lockroom::egress {

const char* scheme_name(Scheme scheme) {
  switch (scheme) {
    case Scheme::kHttp: return "http";
    case Scheme::kHttps: return "https";
    case Scheme::kTcp: return "tcp";
  }
  return "unknown";
}

const char* verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::kAllow: return "allow";
    case Verdict::kDeny: return "deny";
    case Verdict::kAsk: return "ask";
  }
  return "unknown";
}

bool HostPattern::matches(const Host& host) const {
  switch (kind) {
    case Kind::kAny: return true;
    case Kind::kExact: return !host.is_address() && host.name == name;
    case Kind::kAddress: return host.is_address() && host.address->canonical() == address;
    case Kind::kSuffix:
      // Strictly below: "a.example.com" matches "*.example.com", "example.com" and "badexample.com" do not.
      return !host.is_address() && host.name.size() > name.size() + 1 &&
             host.name.compare(host.name.size() - name.size(), name.size(), name) == 0 &&
             host.name[host.name.size() - name.size() - 1] == '.';
  }
  return false;
}

std::string HostPattern::text() const {
  switch (kind) {
    case Kind::kAny: return "*";
    case Kind::kExact: return name;
    case Kind::kAddress: return address.to_string();
    case Kind::kSuffix: return "*." + name;
  }
  return "";
}

Result<HostPattern> parse_host_pattern(std::string_view text) {
  HostPattern pattern;
  if (text == "*") {
    pattern.kind = HostPattern::Kind::kAny;
    return pattern;
  }
  if (text.size() > 2 && text.substr(0, 2) == "*.") {
    std::string_view parent = text.substr(2);
    if (looks_like_ip_literal(parent)) {
      return make_error(ErrorCode::kInvalidInput, "\"" + std::string(text) + "\": a wildcard applies to names, not addresses");
    }
    Result<std::string> name = normalize_host_name(parent);
    if (!name) return make_error(ErrorCode::kInvalidInput, "after \"*.\": " + name.error().message);
    pattern.kind = HostPattern::Kind::kSuffix;
    pattern.name = std::move(*name);
    return pattern;
  }
  if (text.find('*') != std::string_view::npos) {
    return make_error(ErrorCode::kInvalidInput, "\"" + std::string(text.substr(0, 80)) +
                                                    "\": '*' is allowed only alone (\"*\") or as the whole first label "
                                                    "(\"*.example.com\")");
  }
  Result<Host> host = parse_host(text);
  if (!host) return host.error();
  if (host->is_address()) {
    pattern.kind = HostPattern::Kind::kAddress;
    pattern.address = *host->address;
  } else {
    pattern.kind = HostPattern::Kind::kExact;
    pattern.name = std::move(host->name);
  }
  return pattern;
}

bool Rule::matches_port_and_scheme(std::uint16_t port, Scheme scheme) const {
  bool port_ok = ports.empty();
  for (const PortRange& range : ports) port_ok = port_ok || range.contains(port);
  bool scheme_ok = schemes.empty();
  for (Scheme s : schemes) scheme_ok = scheme_ok || s == scheme;
  return port_ok && scheme_ok;
}

const char* rule_origin_name(RuleOrigin origin) {
  switch (origin) {
    case RuleOrigin::kPolicy: return "policy";
    case RuleOrigin::kDefault: return "default";
    case RuleOrigin::kUser: return "user";
  }
  return "policy";
}

Policy with_default_allow(Policy policy, const std::vector<Rule>& defaults) {
  std::erase_if(policy.rules, [](const Rule& rule) { return rule.origin == RuleOrigin::kDefault; });
  if (!policy.use_default_allow) return policy;
  for (Rule rule : defaults) {
    rule.origin = RuleOrigin::kDefault;
    policy.rules.push_back(std::move(rule));
  }
  return policy;
}

Result<Target> make_target(std::string_view host, int port, Scheme scheme) {
  if (port < 1 || port > 65535) {
    return make_error(ErrorCode::kInvalidInput, "port " + std::to_string(port) + " is out of range (1-65535)");
  }
  Result<Host> parsed = parse_host(host);
  if (!parsed) return parsed.error();
  return Target{std::move(*parsed), static_cast<std::uint16_t>(port), scheme};
}

std::string rule_label(const Policy& policy, std::size_t index) {
  const Rule& rule = policy.rules.at(index);
  return rule.name.empty() ? "rules[" + std::to_string(index) + "]" : rule.name;
}

namespace {
std::string describe(const Target& target) {
  return std::string(scheme_name(target.scheme)) + " " + target.host.url_host() + ":" + std::to_string(target.port);
}
}  // namespace

Decision decide(const Policy& policy, const Target& target) {
  std::optional<std::size_t> first_allow;
  for (std::size_t i = 0; i < policy.rules.size(); ++i) {
    const Rule& rule = policy.rules[i];
    if (!rule.host.matches(target.host) || !rule.matches_port_and_scheme(target.port, target.scheme)) continue;
    if (rule.action == Action::kDeny) {
      return Decision{Verdict::kDeny, i, rule_label(policy, i),
                      describe(target) + " is denied by rule " + rule_label(policy, i) + " (" + rule.host.text() + ")"};
    }
    if (!first_allow) first_allow = i;
  }
  if (first_allow) {
    return Decision{Verdict::kAllow, first_allow, rule_label(policy, *first_allow),
                    describe(target) + " is allowed by rule " + rule_label(policy, *first_allow) + " (" +
                        policy.rules[*first_allow].host.text() + ")"};
  }
  if (policy.when_unmatched == WhenUnmatched::kAsk) {
    return Decision{Verdict::kAsk, std::nullopt, "default", "no rule covers " + describe(target) + "; asking"};
  }
  return Decision{Verdict::kDeny, std::nullopt, "default", "no rule allows " + describe(target)};
}

bool should_inspect(const Policy& policy, const Host& host) {
  for (const HostPattern& pattern : policy.inspect) {
    if (pattern.matches(host)) return true;
  }
  return false;
}

AddressCheck check_address(const Policy& policy, const IpAddress& address, std::uint16_t port, Scheme scheme) {
  AddressCheck check;
  IpAddress canonical = address.canonical();
  check.classification = classify_address(canonical);
  std::optional<std::size_t> naming_allow;
  for (std::size_t i = 0; i < policy.rules.size(); ++i) {
    const Rule& rule = policy.rules[i];
    if (rule.host.kind != HostPattern::Kind::kAddress || !(rule.host.address == canonical)) continue;
    if (!rule.matches_port_and_scheme(port, scheme)) continue;
    if (rule.action == Action::kDeny) {
      check.rule_index = i;
      check.reason = "address " + canonical.to_string() + " is denied by rule " + rule_label(policy, i);
      return check;
    }
    if (!naming_allow) naming_allow = i;
  }
  if (check.classification.address_class == AddressClass::kPublic) {
    check.allowed = true;
    return check;
  }
  if (naming_allow) {
    check.allowed = true;
    check.rule_index = naming_allow;
    return check;
  }
  check.reason = "address " + address.to_string() + " is in " + check.classification.range +
                 ", which is never reached unless an allow rule names that exact address";
  return check;
}

}  // namespace lockroom::egress
