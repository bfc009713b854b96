// The default allow list from the git host table and this host's package sources; see
// default_allow.h.
#include "server/egress/policy/default_allow.h"

#include <http_parser.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

extern char** environ;

namespace lockroom::egress {

namespace {

constexpr std::uintmax_t kMaxConfigFileBytes = 1 << 20;

struct GitHost {
  const char* host;
  bool ssh;  // also allow ssh (port 22, a non-TLS tunnel)
};

// The well-known git hosts (code hosting, not package registries).
const GitHost kGitHosts[] = {
    {"github.com", true},          {"api.github.com", false}, {"codeload.github.com", false},
    {"*.githubusercontent.com", false}, {"gitlab.com", true},      {"bitbucket.org", true},
    {"codeberg.org", true},
};

Rule allow_rule(const HostPattern& host, std::uint16_t port, Scheme scheme, std::string name) {
  Rule rule;
  rule.action = Action::kAllow;
  rule.host = host;
  rule.ports = {PortRange{port, port}};
  rule.schemes = {scheme};
  rule.name = std::move(name);
  return rule;
}

std::string trim(std::string_view text) {
  const char* space = " \t\r\n";
  std::size_t start = text.find_first_not_of(space);
  if (start == std::string_view::npos) return "";
  std::size_t end = text.find_last_not_of(space);
  return std::string(text.substr(start, end - start + 1));
}

std::string unquote(std::string text) {
  text = trim(text);
  if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'') && text.back() == text.front()) {
    text = text.substr(1, text.size() - 2);
  }
  return text;
}

std::vector<std::string> split_whitespace(std::string_view text) {
  std::vector<std::string> out;
  std::istringstream in{std::string(text)};
  std::string word;
  while (in >> word) out.push_back(word);
  return out;
}

// Collects rules from URLs, with notes; one rule per (host, port, scheme).
class RuleCollector {
 public:
  explicit RuleCollector(DefaultAllow& out) : out_(out) {}

  void add_url(std::string url, const std::string& source) {
    url = unquote(url);
    if (url.empty()) return;
    std::string original = url;
    bool mirror_list = false;
    for (const char* prefix : {"sparse+", "registry+", "git+", "mirror+", "tor+"}) {
      if (url.rfind(prefix, 0) == 0) {
        if (std::string_view(prefix) == "mirror+") mirror_list = true;
        if (std::string_view(prefix) == "tor+") {
          note(source + ": " + original + " is reached through Tor; not added");
          return;
        }
        url.erase(0, std::string_view(prefix).size());
      }
    }
    if (url.rfind("mirror://", 0) == 0) {
      url = "http://" + url.substr(9);
      mirror_list = true;
    }
    std::size_t colon = url.find(':');
    std::string scheme_text = colon == std::string::npos ? "" : url.substr(0, colon);
    std::transform(scheme_text.begin(), scheme_text.end(), scheme_text.begin(), [](unsigned char c) { return std::tolower(c); });
    if (scheme_text != "http" && scheme_text != "https") {
      if (!scheme_text.empty() && scheme_text != "file" && scheme_text != "cdrom" && scheme_text != "copy") {
        note(source + ": " + original + " has scheme \"" + scheme_text + "\"; only http and https sources are added");
      }
      return;
    }
    http_parser_url u;
    http_parser_url_init(&u);
    if (http_parser_parse_url(url.data(), url.size(), 0, &u) != 0 || !(u.field_set & (1 << UF_HOST))) {
      note(source + ": " + original + " is not a URL; skipped");
      return;
    }
    Result<Host> host = parse_host(std::string_view(url).substr(u.field_data[UF_HOST].off, u.field_data[UF_HOST].len));
    if (!host) {
      note(source + ": " + original + ": " + host.error().message + "; skipped");
      return;
    }
    Scheme scheme = scheme_text == "https" ? Scheme::kHttps : Scheme::kHttp;
    std::uint16_t port = (u.field_set & (1 << UF_PORT)) ? u.port : (scheme == Scheme::kHttps ? 443 : 80);
    if (port == 0) return;
    HostPattern pattern;
    if (host->is_address()) {
      pattern.kind = HostPattern::Kind::kAddress;
      pattern.address = *host->address;
    } else {
      pattern.kind = HostPattern::Kind::kExact;
      pattern.name = host->name;
    }
    if (mirror_list) note(source + ": " + original + " is a mirror list; only its own host is added, not the mirrors it names");
    add(allow_rule(pattern, port, scheme, "default: " + source));
  }

  void add(Rule rule) {
    auto key = std::make_tuple(rule.host.text(), rule.ports.empty() ? 0 : rule.ports[0].first,
                               rule.schemes.empty() ? -1 : static_cast<int>(rule.schemes[0]));
    if (seen_.insert(key).second) out_.rules.push_back(std::move(rule));
  }
  void note(std::string text) { out_.notes.push_back(std::move(text)); }

 private:
  DefaultAllow& out_;
  std::set<std::tuple<std::string, int, int>> seen_;
};

// The file's lines, or nothing (with a note) when it is absent, unreadable or too large.
std::optional<std::vector<std::string>> read_lines(const std::filesystem::path& path, RuleCollector& collector) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) return std::nullopt;
  std::uintmax_t size = std::filesystem::file_size(path, error);
  if (error || size > kMaxConfigFileBytes) {
    collector.note(path.string() + ": larger than 1 MiB or unreadable; skipped");
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    collector.note(path.string() + ": cannot be read; skipped");
    return std::nullopt;
  }
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  collector.note(path.string() + ": read");
  return lines;
}

std::string without_comment(const std::string& line, const char* markers = "#") {
  std::size_t at = line.find_first_of(markers);
  return at == std::string::npos ? line : line.substr(0, at);
}

// deb [options] URI suite [components...]
void read_apt_one_line(const std::filesystem::path& path, RuleCollector& collector) {
  auto lines = read_lines(path, collector);
  if (!lines) return;
  for (const std::string& raw : *lines) {
    std::vector<std::string> words = split_whitespace(without_comment(raw));
    if (words.size() < 2 || (words[0] != "deb" && words[0] != "deb-src")) continue;
    std::size_t i = 1;
    if (words[i].front() == '[') {
      while (i < words.size() && words[i].back() != ']') ++i;
      ++i;
    }
    if (i < words.size()) collector.add_url(words[i], "apt");
  }
}

// deb822: stanzas separated by blank lines; URIs: may continue on indented lines.
void read_apt_deb822(const std::filesystem::path& path, RuleCollector& collector) {
  auto lines = read_lines(path, collector);
  if (!lines) return;
  std::vector<std::string> uris;
  bool enabled = true;
  std::string field;
  auto flush = [&] {
    if (enabled) {
      for (const std::string& uri : uris) collector.add_url(uri, "apt");
    }
    uris.clear();
    enabled = true;
    field.clear();
  };
  for (const std::string& raw : *lines) {
    if (!raw.empty() && raw[0] == '#') continue;
    if (trim(raw).empty()) {
      flush();
      continue;
    }
    std::string value;
    if (raw[0] == ' ' || raw[0] == '\t') {
      value = raw;  // continuation of `field`
    } else {
      std::size_t colon = raw.find(':');
      if (colon == std::string::npos) continue;
      field = trim(raw.substr(0, colon));
      std::transform(field.begin(), field.end(), field.begin(), [](unsigned char c) { return std::tolower(c); });
      value = raw.substr(colon + 1);
    }
    if (field == "uris") {
      for (std::string& uri : split_whitespace(value)) uris.push_back(uri);
    } else if (field == "enabled") {
      std::string v = trim(value);
      std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
      enabled = !(v == "no" || v == "false" || v == "0");
    }
  }
  flush();
}

void read_apt_directory(const std::filesystem::path& dir, RuleCollector& collector) {
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) return;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    if (file.extension() == ".list") read_apt_one_line(file, collector);
    else if (file.extension() == ".sources") read_apt_deb822(file, collector);
  }
}

// key = value lines ("registry", "@scope:registry").
void read_npmrc(const std::filesystem::path& path, RuleCollector& collector) {
  auto lines = read_lines(path, collector);
  if (!lines) return;
  for (const std::string& raw : *lines) {
    std::string line = trim(without_comment(raw, "#;"));
    std::size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = trim(line.substr(0, eq));
    if (key == "registry" || (key.size() > 9 && key.front() == '@' && key.substr(key.size() - 9) == ":registry")) {
      std::string value = unquote(line.substr(eq + 1));
      if (value.find("${") != std::string::npos) {
        collector.note(path.string() + ": " + key + " uses an environment variable; not expanded, skipped");
        continue;
      }
      collector.add_url(value, "npm");
    }
  }
}

// INI; index-url and extra-index-url, whose value may continue on indented lines.
void read_pip_conf(const std::filesystem::path& path, RuleCollector& collector) {
  auto lines = read_lines(path, collector);
  if (!lines) return;
  bool in_index_value = false;
  for (const std::string& raw : *lines) {
    std::string line = without_comment(raw, "#;");
    if (trim(line).empty()) continue;
    if (in_index_value && (raw[0] == ' ' || raw[0] == '\t')) {
      for (const std::string& url : split_whitespace(line)) collector.add_url(url, "pip");
      continue;
    }
    in_index_value = false;
    std::size_t sep = line.find_first_of("=:");
    if (sep == std::string::npos) continue;
    std::string key = trim(line.substr(0, sep));
    std::replace(key.begin(), key.end(), '_', '-');
    if (key == "index-url" || key == "extra-index-url") {
      in_index_value = true;
      for (const std::string& url : split_whitespace(line.substr(sep + 1))) collector.add_url(url, "pip");
    }
  }
}

// TOML, the small part used for registries: `index = "..."` under [registries.*] / [registry],
// `registry = "..."` under [source.*].
void read_cargo_config(const std::filesystem::path& path, RuleCollector& collector) {
  auto lines = read_lines(path, collector);
  if (!lines) return;
  std::string section;
  for (const std::string& raw : *lines) {
    std::string line = trim(without_comment(raw));
    if (line.empty()) continue;
    if (line.front() == '[') {
      section = trim(line.substr(1, line.find(']') == std::string::npos ? std::string::npos : line.find(']') - 1));
      continue;
    }
    std::size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = trim(line.substr(0, eq));
    bool registries = section.rfind("registries.", 0) == 0 || section == "registry";
    bool source = section.rfind("source.", 0) == 0;
    if ((registries && key == "index") || (source && key == "registry")) collector.add_url(line.substr(eq + 1), "cargo");
  }
}

}  // namespace

PackageSourceFiles system_package_source_files(const std::filesystem::path& etc, const std::filesystem::path& home) {
  PackageSourceFiles files;
  files.apt_one_line = {etc / "apt" / "sources.list"};
  files.apt_directories = {etc / "apt" / "sources.list.d"};
  files.npmrc = {etc / "npmrc", home / ".npmrc"};
  files.pip_conf = {etc / "pip.conf", etc / "xdg" / "pip" / "pip.conf", home / ".pip" / "pip.conf", home / ".config" / "pip" / "pip.conf"};
  files.cargo_config = {home / ".cargo" / "config.toml", home / ".cargo" / "config"};
  return files;
}

Environment package_source_environment() {
  Environment environment;
  for (const char* name : {"NPM_CONFIG_REGISTRY", "npm_config_registry", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "GOPROXY"}) {
    if (const char* value = std::getenv(name)) environment[name] = value;
  }
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string_view text(*entry);
    std::size_t eq = text.find('=');
    std::string_view name = text.substr(0, eq);
    if (eq != std::string_view::npos && name.rfind("CARGO_REGISTRIES_", 0) == 0 && name.size() > 23 &&
        name.substr(name.size() - 6) == "_INDEX") {
      environment[std::string(name)] = std::string(text.substr(eq + 1));
    }
  }
  return environment;
}

std::vector<Rule> git_host_rules() {
  std::vector<Rule> rules;
  for (const GitHost& git : kGitHosts) {
    HostPattern pattern = *parse_host_pattern(git.host);
    rules.push_back(allow_rule(pattern, 443, Scheme::kHttps, std::string("default: git host ") + git.host));
    if (git.ssh) rules.push_back(allow_rule(pattern, 22, Scheme::kTcp, std::string("default: git host ") + git.host + " (ssh)"));
  }
  return rules;
}

DefaultAllow package_source_rules(const PackageSourceFiles& files, const Environment& environment) {
  DefaultAllow out;
  RuleCollector collector(out);
  for (const auto& file : files.apt_one_line) read_apt_one_line(file, collector);
  for (const auto& dir : files.apt_directories) read_apt_directory(dir, collector);
  for (const auto& file : files.npmrc) read_npmrc(file, collector);
  for (const auto& file : files.pip_conf) read_pip_conf(file, collector);
  for (const auto& file : files.cargo_config) read_cargo_config(file, collector);
  for (const auto& [name, value] : environment) {
    if (name == "NPM_CONFIG_REGISTRY" || name == "npm_config_registry") {
      collector.add_url(value, "npm");
    } else if (name == "PIP_INDEX_URL" || name == "PIP_EXTRA_INDEX_URL") {
      for (const std::string& url : split_whitespace(value)) collector.add_url(url, "pip");
    } else if (name == "GOPROXY") {
      std::string list = value;
      std::replace(list.begin(), list.end(), '|', ',');
      std::replace(list.begin(), list.end(), ',', ' ');
      for (const std::string& entry : split_whitespace(list)) {
        if (entry != "direct" && entry != "off") collector.add_url(entry, "go");
      }
    } else if (name.rfind("CARGO_REGISTRIES_", 0) == 0) {
      collector.add_url(value, "cargo");
    }
  }
  return out;
}

DefaultAllow default_allow_list(const PackageSourceFiles& files, const Environment& environment) {
  DefaultAllow out;
  RuleCollector collector(out);
  for (Rule& rule : git_host_rules()) collector.add(std::move(rule));
  DefaultAllow packages = package_source_rules(files, environment);
  for (Rule& rule : packages.rules) collector.add(std::move(rule));
  out.notes.insert(out.notes.end(), packages.notes.begin(), packages.notes.end());
  return out;
}

}  // namespace lockroom::egress
