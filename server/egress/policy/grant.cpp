// Grants from a user's answer to network/approve; see grant.h.
#include "server/egress/policy/grant.h"

#include <algorithm>
#include <array>

#include "server/egress/policy/policy_json.h"

namespace lockroom::egress {

namespace {

// Second-level labels under which two-letter country codes register names (co.uk, com.au, ...).
constexpr std::array<std::string_view, 20> kCountrySecondLevels = {"co", "com", "net", "org", "gov", "edu", "ac",  "or",  "ne",  "go",
                                                                   "mil", "nic", "gob", "gouv", "ltd", "plc", "nom", "sch", "info", "biz"};
// Shared-hosting suffixes where each customer gets its own name (a subset of the PSL's private part).
constexpr std::array<std::string_view, 18> kSharedSuffixes = {
    "github.io",       "gitlab.io",     "herokuapp.com",    "appspot.com",      "netlify.app",     "vercel.app",
    "pages.dev",       "workers.dev",   "cloudfront.net",   "amazonaws.com",    "blogspot.com",    "azurewebsites.net",
    "web.app",         "firebaseapp.com", "fly.dev",        "onrender.com",     "glitch.me",       "repl.co"};

std::vector<std::string_view> labels_of(std::string_view name) {
  std::vector<std::string_view> labels;
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t dot = name.find('.', start);
    if (dot == std::string_view::npos) dot = name.size();
    labels.push_back(name.substr(start, dot - start));
    start = dot + 1;
  }
  return labels;
}

std::string join_last(const std::vector<std::string_view>& labels, std::size_t count) {
  std::string out;
  for (std::size_t i = labels.size() - count; i < labels.size(); ++i) {
    if (!out.empty()) out += '.';
    out += labels[i];
  }
  return out;
}

// `name` equals `domain` or lies below it.
bool at_or_below(std::string_view name, std::string_view domain) {
  if (name == domain) return true;
  return name.size() > domain.size() + 1 && name.substr(name.size() - domain.size()) == domain &&
         name[name.size() - domain.size() - 1] == '.';
}

bool covers_port(const std::vector<PortRange>& ports, std::uint16_t port) {
  return std::any_of(ports.begin(), ports.end(), [port](const PortRange& range) { return range.contains(port); });
}

// The scope's ports on the rule: the asked port, any, or a list that must contain the asked port.
Result<Rule> rule_with_ports(Rule rule, const Target& asked, const GrantScope& scope) {
  if (scope.any_port) return rule;
  if (scope.ports.empty()) {
    rule.ports = {PortRange{asked.port, asked.port}};
    return rule;
  }
  if (!covers_port(scope.ports, asked.port))
    return make_error(ErrorCode::kInvalidInput, "scope.ports does not include the asked port " + std::to_string(asked.port));
  rule.ports = scope.ports;
  return rule;
}

}  // namespace

std::optional<std::string> registrable_domain(std::string_view host_name) {
  if (host_name.empty() || looks_like_ip_literal(host_name)) return std::nullopt;
  auto labels = labels_of(host_name);
  if (labels.size() < 2 || std::any_of(labels.begin(), labels.end(), [](std::string_view l) { return l.empty(); })) return std::nullopt;
  std::size_t suffix = 1;
  std::string last_two = join_last(labels, 2);
  if (std::find(kSharedSuffixes.begin(), kSharedSuffixes.end(), last_two) != kSharedSuffixes.end()) suffix = 2;
  else if (labels.back().size() == 2 &&
           std::find(kCountrySecondLevels.begin(), kCountrySecondLevels.end(), labels[labels.size() - 2]) != kCountrySecondLevels.end())
    suffix = 2;
  if (labels.size() < suffix + 1) return std::nullopt;
  return join_last(labels, suffix + 1);
}

Result<Rule> grant_rule(const Target& asked, const GrantScope& scope) {
  Rule rule;
  rule.action = Action::kAllow;
  rule.name = "user";
  rule.origin = RuleOrigin::kUser;
  std::string asked_text = asked.host.url_host();
  if (scope.host.empty() || scope.host == asked.host.name || scope.host == asked_text) {
    if (asked.host.address) {
      rule.host.kind = HostPattern::Kind::kAddress;
      rule.host.address = asked.host.address->canonical();
    } else {
      rule.host.kind = HostPattern::Kind::kExact;
      rule.host.name = asked.host.name;
    }
  } else {
    Result<HostPattern> pattern = parse_host_pattern(scope.host);
    if (!pattern) return make_error(ErrorCode::kInvalidInput, "scope.host: " + pattern.error().message);
    if (pattern->kind == HostPattern::Kind::kAny)
      return make_error(ErrorCode::kInvalidInput, "scope.host: \"*\" would allow every host; grant " + asked_text +
                                                      " or a wildcard below its registrable domain");
    if (!pattern->matches(asked.host))
      return make_error(ErrorCode::kInvalidInput, "scope.host: \"" + scope.host.substr(0, 80) + "\" does not cover the asked host " +
                                                      asked_text + "; a grant covers the asked host or a wildcard above it");
    if (pattern->kind != HostPattern::Kind::kSuffix) {  // an exact name or address that matches: the asked host, spelt otherwise
      rule.host = std::move(*pattern);
      return rule_with_ports(std::move(rule), asked, scope);
    }
    auto registrable = registrable_domain(asked.host.name);
    if (!registrable || !at_or_below(pattern->name, *registrable))
      return make_error(ErrorCode::kInvalidInput,
                        "scope.host: \"" + scope.host.substr(0, 80) + "\" is wider than " +
                            (registrable ? "the registrable domain of " + asked_text + " (" + *registrable + "); use \"*." + *registrable +
                                               "\" at most"
                                         : asked_text + " has no registrable domain below a public suffix; grant the host itself"));
    rule.host = std::move(*pattern);
  }
  return rule_with_ports(std::move(rule), asked, scope);
}

std::vector<GrantScope> suggested_scopes(const Target& asked) {
  std::vector<GrantScope> scopes{GrantScope{}, GrantScope{"", true, {}}};
  if (asked.host.address) return scopes;
  auto registrable = registrable_domain(asked.host.name);
  if (registrable && asked.host.name != *registrable) scopes.push_back(GrantScope{"*." + *registrable, true, {}});
  return scopes;
}

Result<GrantScope> parse_grant_scope(const json& value, const std::string& path) {
  if (!value.is_object()) return type_error(path, "an object like {\"host\": \"*.example.com\", \"ports\": \"any\"}", value);
  Result<void> known = reject_unknown_fields(value, {"host", "ports"}, path);
  if (!known) return known.error();
  GrantScope scope;
  if (auto host = value.find("host"); host != value.end()) {
    if (!host->is_string()) return type_error(path + ".host", "a host or \"*.domain\"", *host);
    scope.host = host->get<std::string>();
    if (scope.host.empty() || scope.host.size() > 255) return field_error(path + ".host", "must be 1-255 characters");
  }
  if (auto ports = value.find("ports"); ports != value.end()) {
    if (*ports == "any") {
      scope.any_port = true;
    } else {
      Result<std::vector<PortRange>> parsed = parse_ports(*ports, path + ".ports");
      if (!parsed) return parsed.error();
      scope.ports = std::move(*parsed);
    }
  }
  return scope;
}

json grant_scope_to_json(const GrantScope& scope, const Target& asked) {
  json ports = scope.any_port ? json("any") : scope.ports.empty() ? json::array({asked.port}) : ports_to_json(scope.ports);
  return json{{"host", scope.host.empty() ? asked.host.url_host() : scope.host}, {"ports", std::move(ports)}};
}

}  // namespace lockroom::egress
