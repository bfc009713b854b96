// Secret declarations and injection into request heads; see secrets.h.
#include "server/egress/policy/secrets.h"

#include <algorithm>
#include <set>

namespace lockroom::egress {

namespace {

bool is_env_name(std::string_view name) {
  if (name.empty() || name.size() > 256 || (name[0] >= '0' && name[0] <= '9')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool is_header_token(std::string_view text) {
  if (text.empty() || text.size() > 256) return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

bool has_line_break_or_nul(std::string_view text) { return text.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos; }

Result<std::string> required_string(const json& object, const char* field, const std::string& path) {
  auto it = object.find(field);
  if (it == object.end()) return field_error(path + "." + field, "is required");
  if (!it->is_string()) return type_error(path + "." + field, "a string", *it);
  return it->get<std::string>();
}

Result<SecretSource> parse_source(const json& value, const std::string& path) {
  if (!value.is_object()) return type_error(path, "an object with one of \"env\", \"file\" or \"command\"", value);
  Result<void> known = reject_unknown_fields(value, {"env", "file", "command", "timeoutMs"}, path);
  if (!known) return known.error();
  int kinds = static_cast<int>(value.contains("env")) + static_cast<int>(value.contains("file")) + static_cast<int>(value.contains("command"));
  if (kinds != 1) return field_error(path, "must have exactly one of \"env\", \"file\" or \"command\"");
  SecretSource source;
  if (value.contains("timeoutMs") && !value.contains("command")) {
    return field_error(path + ".timeoutMs", "applies only to \"command\"");
  }
  if (value.contains("env")) {
    Result<std::string> env = required_string(value, "env", path);
    if (!env) return env.error();
    if (!is_env_name(*env)) return field_error(path + ".env", describe_json(*env) + " is not an environment variable name");
    source.kind = SecretSource::Kind::kEnv;
    source.env = std::move(*env);
  } else if (value.contains("file")) {
    Result<std::string> file = required_string(value, "file", path);
    if (!file) return file.error();
    if (file->empty() || (*file)[0] != '/' || file->find('\0') != std::string::npos || file->size() > 4096) {
      return field_error(path + ".file", describe_json(*file) + " must be an absolute path");
    }
    source.kind = SecretSource::Kind::kFile;
    source.file = std::move(*file);
  } else {
    const json& command = value["command"];
    if (!command.is_array() || command.empty()) return type_error(path + ".command", "a non-empty list of strings (argv)", command);
    if (command.size() > 64) return field_error(path + ".command", "has more than 64 arguments");
    for (std::size_t i = 0; i < command.size(); ++i) {
      std::string item_path = path + ".command[" + std::to_string(i) + "]";
      if (!command[i].is_string()) return type_error(item_path, "a string", command[i]);
      const std::string& arg = command[i].get_ref<const std::string&>();
      if (arg.find('\0') != std::string::npos || arg.size() > 4096 || (i == 0 && arg.empty())) {
        return field_error(item_path, "must be a non-empty argument without NUL bytes");
      }
      source.command.push_back(arg);
    }
    source.kind = SecretSource::Kind::kCommand;
    if (auto timeout = value.find("timeoutMs"); timeout != value.end()) {
      if (!timeout->is_number_integer() || timeout->get<std::int64_t>() < 1 || timeout->get<std::int64_t>() > 60000) {
        return field_error(path + ".timeoutMs", "must be an integer from 1 to 60000, got " + describe_json(*timeout));
      }
      source.timeout = std::chrono::milliseconds(timeout->get<std::int64_t>());
    }
  }
  return source;
}

Result<std::optional<HeaderInjection>> parse_inject(const json& value, const std::string& path) {
  if (value == "sentinel") return std::optional<HeaderInjection>();
  if (!value.is_object()) return type_error(path, "\"sentinel\" or {\"header\": ..., \"value\": ...}", value);
  Result<void> known = reject_unknown_fields(value, {"header", "value"}, path);
  if (!known) return known.error();
  Result<std::string> header = required_string(value, "header", path);
  if (!header) return header.error();
  if (!is_header_token(*header)) return field_error(path + ".header", describe_json(*header) + " is not a valid header name");
  if (header_name_equals(*header, "Host") || header_name_equals(*header, "Content-Length") ||
      header_name_equals(*header, "Transfer-Encoding") || header_name_equals(*header, "Connection")) {
    return field_error(path + ".header", "\"" + *header + "\" frames or routes the request and cannot carry a secret");
  }
  Result<std::string> text = required_string(value, "value", path);
  if (!text) return text.error();
  std::size_t first = text->find("{value}");
  if (first == std::string::npos || text->find("{value}", first + 1) != std::string::npos) {
    return field_error(path + ".value", describe_json(*text) + " must contain \"{value}\" exactly once");
  }
  if (has_line_break_or_nul(*text) || text->size() > 1024) return field_error(path + ".value", "has a line break or NUL, or is too long");
  return std::optional<HeaderInjection>(HeaderInjection{std::move(*header), std::move(*text)});
}

}  // namespace

bool Secret::scoped_to(const Host& host) const {
  return std::any_of(hosts.begin(), hosts.end(), [&](const HostPattern& p) { return p.matches(host); });
}

Result<Secret> parse_secret(const json& value, const std::string& path) {
  if (!value.is_object()) return type_error(path, "an object", value);
  Result<void> known = reject_unknown_fields(value, {"name", "from", "hosts", "inject"}, path);
  if (!known) return known.error();
  Secret secret;
  Result<std::string> name = required_string(value, "name", path);
  if (!name) return name.error();
  if (!is_valid_secret_name(*name)) {
    return field_error(path + ".name", describe_json(*name) + " must be 1-64 letters, digits or '_' (it becomes LOCKROOM_SECRET_<NAME>)");
  }
  secret.name = std::move(*name);

  auto from = value.find("from");
  if (from == value.end()) return field_error(path + ".from", "is required");
  Result<SecretSource> source = parse_source(*from, path + ".from");
  if (!source) return source.error();
  secret.from = std::move(*source);

  auto hosts = value.find("hosts");
  if (hosts == value.end()) return field_error(path + ".hosts", "is required: the hosts this secret may be sent to");
  if (!hosts->is_array() || hosts->empty()) return type_error(path + ".hosts", "a non-empty list of host patterns", *hosts);
  if (hosts->size() > 64) return field_error(path + ".hosts", "has more than 64 patterns");
  for (std::size_t i = 0; i < hosts->size(); ++i) {
    std::string item_path = path + ".hosts[" + std::to_string(i) + "]";
    if (!(*hosts)[i].is_string()) return type_error(item_path, "a host pattern string", (*hosts)[i]);
    Result<HostPattern> pattern = parse_host_pattern((*hosts)[i].get_ref<const std::string&>());
    if (!pattern) return field_error(item_path, pattern.error().message);
    if (pattern->kind == HostPattern::Kind::kAny) return field_error(item_path, "a secret cannot be sent to every host (\"*\"); name its hosts");
    secret.hosts.push_back(std::move(*pattern));
  }

  if (auto inject = value.find("inject"); inject != value.end()) {
    Result<std::optional<HeaderInjection>> parsed = parse_inject(*inject, path + ".inject");
    if (!parsed) return parsed.error();
    secret.header = std::move(*parsed);
  }
  return secret;
}

Result<std::vector<Secret>> parse_secrets(const json& value, const std::string& path) {
  if (!value.is_array()) return type_error(path, "a list of secrets", value);
  if (value.size() > kMaxSecrets) return field_error(path, "has more than " + std::to_string(kMaxSecrets) + " secrets");
  std::vector<Secret> secrets;
  std::set<std::string> sentinels;
  for (std::size_t i = 0; i < value.size(); ++i) {
    std::string item_path = path + "[" + std::to_string(i) + "]";
    Result<Secret> secret = parse_secret(value[i], item_path);
    if (!secret) return secret.error();
    if (!sentinels.insert(secret->sentinel()).second) {
      return field_error(item_path + ".name", "\"" + secret->name + "\" has the same sentinel as an earlier secret (" + secret->sentinel() + ")");
    }
    secrets.push_back(std::move(*secret));
  }
  return secrets;
}

std::vector<std::string> sentinels_of(const std::vector<Secret>& secrets) {
  std::vector<std::string> out;
  for (const Secret& s : secrets) out.push_back(s.sentinel());
  return out;
}

Result<InjectionResult> inject_secrets(const RequestHead& head, const std::vector<Secret>& secrets, const SecretValues& values) {
  InjectionResult result;
  const std::vector<std::string> sentinels = sentinels_of(secrets);

  // 1. A sentinel heading for a host outside its secret's scope blocks the request.
  auto find_misplaced = [&](std::string_view text, const std::string& where) {
    for (const SentinelMatch& m : find_sentinels(text, sentinels)) {
      const Secret& secret = secrets[m.sentinel];
      if (secret.scoped_to(head.host)) continue;
      result.blocked = true;
      result.blocked_secret = secret.name;
      result.reason = "sentinel of secret " + secret.name + " sent to host " + head.host.url_host() +
                      ", which is not one of its hosts (" + where + ")";
      return true;
    }
    return false;
  };
  std::string upper_host = head.host.name;
  std::transform(upper_host.begin(), upper_host.end(), upper_host.begin(), [](char c) { return (c >= 'a' && c <= 'z') ? c - 'a' + 'A' : c; });
  if (find_misplaced(upper_host, "in the host name") || find_misplaced(head.target, "in the request line")) return result;
  for (const HttpHeader& header : head.headers) {
    if (find_misplaced(header.name, "in a header name") || find_misplaced(header.value, "in header " + header.name)) return result;
  }

  // 2. In scope: put the values in.
  std::set<std::string> injected;
  auto value_of = [&](const Secret& secret) -> Result<std::string> {
    auto it = values.find(secret.name);
    if (it == values.end()) {
      return make_error(ErrorCode::kUnavailable, "secret " + secret.name + " has no value (its source could not be read)");
    }
    if (has_line_break_or_nul(it->second)) {
      return make_error(ErrorCode::kInvalidInput, "the value of secret " + secret.name + " has a line break or NUL and cannot go into a header");
    }
    return it->second;
  };
  result.head = head;
  for (HttpHeader& header : result.head.headers) {
    std::vector<SentinelMatch> matches = find_sentinels(header.value, sentinels);
    if (matches.empty()) continue;
    std::string rewritten;
    std::size_t done = 0;
    for (const SentinelMatch& m : matches) {
      if (m.offset < done) continue;  // inside a match already replaced
      Result<std::string> value = value_of(secrets[m.sentinel]);
      if (!value) return value.error();
      rewritten.append(header.value, done, m.offset - done);
      rewritten += *value;
      done = m.offset + m.length;
      injected.insert(secrets[m.sentinel].name);
    }
    rewritten.append(header.value, done);
    header.value = std::move(rewritten);
  }
  for (const Secret& secret : secrets) {
    if (!secret.header || !secret.scoped_to(head.host)) continue;
    Result<std::string> value = value_of(secret);
    if (!value) return value.error();
    HttpHeaders& headers = result.head.headers;
    headers.erase(std::remove_if(headers.begin(), headers.end(), [&](const HttpHeader& h) { return header_name_equals(h.name, secret.header->header); }),
                  headers.end());
    std::string text = secret.header->value_template;
    text.replace(text.find("{value}"), 7, *value);
    headers.push_back(HttpHeader{secret.header->header, std::move(text)});
    injected.insert(secret.name);
  }
  result.injected.assign(injected.begin(), injected.end());
  return result;
}

}  // namespace lockroom::egress
