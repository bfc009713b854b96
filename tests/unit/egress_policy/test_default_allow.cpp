// The default allow list: the git host table plus the package sources read from (temporary)
// apt, npm, pip and cargo configuration files in both apt formats, and from the environment.
#include <catch2/catch.hpp>

#include <algorithm>

#include "server/egress/policy/default_allow.h"
#include "tests/support/temp_dir.h"

using namespace lockroom::egress;
using lockroom::testing::TempDir;

namespace {

struct Allowed {
  std::string host;
  int port;
  Scheme scheme;
  bool operator<(const Allowed& o) const { return std::tie(host, port, scheme) < std::tie(o.host, o.port, o.scheme); }
  bool operator==(const Allowed& o) const { return std::tie(host, port, scheme) == std::tie(o.host, o.port, o.scheme); }
};

std::vector<Allowed> allowed(const std::vector<Rule>& rules) {
  std::vector<Allowed> out;
  for (const Rule& rule : rules) {
    REQUIRE(rule.action == Action::kAllow);
    REQUIRE(rule.ports.size() == 1);
    REQUIRE(rule.ports[0].first == rule.ports[0].last);
    REQUIRE(rule.schemes.size() == 1);
    out.push_back({rule.host.text(), rule.ports[0].first, rule.schemes[0]});
  }
  std::sort(out.begin(), out.end());
  return out;
}

Verdict verdict(const Policy& policy, const char* host, int port, Scheme scheme) { return decide(policy, *make_target(host, port, scheme)).verdict; }

}  // namespace

TEST_CASE("git hosts come from one table: https everywhere, ssh for the main hosts") {
  Policy policy;
  policy.rules = git_host_rules();
  CHECK(verdict(policy, "github.com", 443, Scheme::kHttps) == Verdict::kAllow);
  CHECK(verdict(policy, "github.com", 22, Scheme::kTcp) == Verdict::kAllow);
  CHECK(verdict(policy, "codeload.github.com", 443, Scheme::kHttps) == Verdict::kAllow);
  CHECK(verdict(policy, "objects.githubusercontent.com", 443, Scheme::kHttps) == Verdict::kAllow);
  CHECK(verdict(policy, "gitlab.com", 22, Scheme::kTcp) == Verdict::kAllow);
  CHECK(verdict(policy, "codeberg.org", 443, Scheme::kHttps) == Verdict::kAllow);
  CHECK(verdict(policy, "github.com", 80, Scheme::kHttp) == Verdict::kDeny);
  CHECK(verdict(policy, "gist.github.com", 443, Scheme::kHttps) == Verdict::kDeny);
  CHECK(verdict(policy, "evil.example", 443, Scheme::kHttps) == Verdict::kDeny);
  CHECK(decide(policy, *make_target("github.com", 443, Scheme::kHttps)).rule == "default: git host github.com");
}

TEST_CASE("package sources are read from apt (both formats), npm, pip and cargo files and the environment") {
  TempDir dir;
  PackageSourceFiles files;
  files.apt_one_line = {dir.write("etc/apt/sources.list",
                                  "# a comment\n"
                                  "deb http://deb.mirror.example/debian bookworm main\n"
                                  "deb-src [arch=amd64 signed-by=/usr/share/keyrings/x.gpg] https://src.mirror.example:8443/debian bookworm main\n"
                                  "deb [trusted=yes] file:/srv/local-repo ./\n"
                                  "deb cdrom:[Debian 12]/ bookworm main\n"
                                  "#deb http://commented.example/debian bookworm main\n"
                                  "deb tor+http://onion.example/debian bookworm main\n")};
  dir.write("etc/apt/sources.list.d/extra.list", "deb http://extra.mirror.example/ubuntu jammy main\n");
  dir.write("etc/apt/sources.list.d/ignored.list.save", "deb http://ignored.example/ x main\n");
  dir.write("etc/apt/sources.list.d/debian.sources",
            "Types: deb deb-src\n"
            "URIs: https://a.mirror.example/debian\n"
            "  http://b.mirror.example/debian\n"
            "Suites: bookworm bookworm-updates\n"
            "Components: main\n"
            "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
            "\n"
            "# a disabled one\n"
            "Types: deb\n"
            "URIs: http://disabled.mirror.example/debian\n"
            "Suites: bookworm\n"
            "Enabled: no\n"
            "\n"
            "Types: deb\n"
            "uris: mirror+http://mirrors.mirror.example/list.txt\n"
            "Suites: bookworm\n");
  files.apt_directories = {dir.path() / "etc/apt/sources.list.d"};
  files.npmrc = {dir.write("home/.npmrc",
                           "registry = \"https://npm.mirror.example/\"\n"
                           "@corp:registry=https://npm.corp.example:4873/\n"
                           "//npm.corp.example:4873/:_authToken=${NPM_TOKEN}\n"
                           "@env:registry=${CORP_REGISTRY}\n"
                           "; registry=https://commented.example/\n"),
                 dir.path() / "etc/npmrc"};  // absent: skipped quietly
  files.pip_conf = {dir.write("etc/pip.conf",
                              "[global]\n"
                              "index-url = https://pypi.mirror.example/simple\n"
                              "extra-index-url =\n"
                              "    https://extra1.mirror.example/simple\n"
                              "    http://extra2.mirror.example:8080/simple\n"
                              "trusted-host = extra2.mirror.example\n")};
  files.cargo_config = {dir.write("home/.cargo/config.toml",
                                  "[source.crates-io]\n"
                                  "replace-with = \"corp\"\n"
                                  "[source.corp]\n"
                                  "registry = \"sparse+https://crates.corp.example/index/\"\n"
                                  "[registries.other]\n"
                                  "index = \"https://other-crates.example/git/index\" # trailing comment\n"
                                  "[net]\n"
                                  "index = \"https://not-a-registry.example/\"\n")};
  Environment environment = {{"GOPROXY", "https://goproxy.mirror.example,direct"},
                             {"PIP_INDEX_URL", "https://env-pypi.mirror.example/simple"},
                             {"NPM_CONFIG_REGISTRY", "http://env-npm.mirror.example:8081"},
                             {"CARGO_REGISTRIES_MINE_INDEX", "https://env-crates.example/index"},
                             {"UNRELATED", "https://unrelated.example/"}};

  DefaultAllow result = package_source_rules(files, environment);
  std::vector<Allowed> expected = {
      {"a.mirror.example", 443, Scheme::kHttps},
      {"b.mirror.example", 80, Scheme::kHttp},
      {"crates.corp.example", 443, Scheme::kHttps},
      {"deb.mirror.example", 80, Scheme::kHttp},
      {"env-crates.example", 443, Scheme::kHttps},
      {"env-npm.mirror.example", 8081, Scheme::kHttp},
      {"env-pypi.mirror.example", 443, Scheme::kHttps},
      {"extra.mirror.example", 80, Scheme::kHttp},
      {"extra1.mirror.example", 443, Scheme::kHttps},
      {"extra2.mirror.example", 8080, Scheme::kHttp},
      {"goproxy.mirror.example", 443, Scheme::kHttps},
      {"mirrors.mirror.example", 80, Scheme::kHttp},
      {"npm.corp.example", 4873, Scheme::kHttps},
      {"npm.mirror.example", 443, Scheme::kHttps},
      {"other-crates.example", 443, Scheme::kHttps},
      {"pypi.mirror.example", 443, Scheme::kHttps},
      {"src.mirror.example", 8443, Scheme::kHttps},
  };
  std::sort(expected.begin(), expected.end());
  CHECK(allowed(result.rules) == expected);

  auto noted = [&](const std::string& text) {
    return std::any_of(result.notes.begin(), result.notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; });
  };
  CHECK(noted("onion.example/debian is reached through Tor"));
  CHECK(noted("mirror list"));
  CHECK(noted("uses an environment variable"));
  CHECK(noted("sources.list: read"));
  CHECK(noted("debian.sources: read"));
  CHECK_FALSE(noted("ignored.list.save"));

  // Rules carry where they came from, and only allow that host's port and scheme.
  Policy policy;
  policy.rules = result.rules;
  Decision d = decide(policy, *make_target("deb.mirror.example", 80, Scheme::kHttp));
  CHECK(d.verdict == Verdict::kAllow);
  CHECK(d.rule == "default: apt");
  CHECK(verdict(policy, "deb.mirror.example", 443, Scheme::kHttps) == Verdict::kDeny);
  CHECK(verdict(policy, "sub.deb.mirror.example", 80, Scheme::kHttp) == Verdict::kDeny);
}

TEST_CASE("the whole default list: git hosts and package sources without duplicates, a policy can drop it") {
  TempDir dir;
  PackageSourceFiles files;
  files.apt_one_line = {dir.write("sources.list", "deb http://deb.mirror.example/debian bookworm main\n"
                                                  "deb http://deb.mirror.example/debian-security bookworm-security main\n")};
  files.npmrc = {dir.write("npmrc", "registry=https://github.com/npm/\n")};  // the same rule as a git host
  files.pip_conf = {dir.write("pip.conf", std::string(2 << 20, '#'))};      // too large: skipped with a note
  DefaultAllow all = default_allow_list(files, {});
  CHECK(all.rules.size() == git_host_rules().size() + 1);
  CHECK(std::any_of(all.notes.begin(), all.notes.end(), [](const std::string& n) { return n.find("larger than 1 MiB") != std::string::npos; }));

  Policy keeps = with_default_allow(Policy{}, all.rules);
  CHECK(verdict(keeps, "deb.mirror.example", 80, Scheme::kHttp) == Verdict::kAllow);
  Policy drops;
  drops.use_default_allow = false;
  drops = with_default_allow(drops, all.rules);
  CHECK(verdict(drops, "deb.mirror.example", 80, Scheme::kHttp) == Verdict::kDeny);
  CHECK(verdict(drops, "github.com", 443, Scheme::kHttps) == Verdict::kDeny);
}

TEST_CASE("the usual configuration places, and the environment variables read") {
  PackageSourceFiles files = system_package_source_files("/etc", "/home/someone");
  CHECK(files.apt_one_line == std::vector<std::filesystem::path>{"/etc/apt/sources.list"});
  CHECK(files.apt_directories == std::vector<std::filesystem::path>{"/etc/apt/sources.list.d"});
  CHECK(std::find(files.npmrc.begin(), files.npmrc.end(), "/home/someone/.npmrc") != files.npmrc.end());
  setenv("GOPROXY", "https://goproxy.env.example|direct", 1);
  setenv("CARGO_REGISTRIES_TEAM_INDEX", "https://team.example/index", 1);
  Environment environment = package_source_environment();
  CHECK(environment["GOPROXY"] == "https://goproxy.env.example|direct");
  CHECK(environment["CARGO_REGISTRIES_TEAM_INDEX"] == "https://team.example/index");
  DefaultAllow from_env = package_source_rules({}, environment);
  std::vector<Allowed> got = allowed(from_env.rules);
  CHECK(std::find(got.begin(), got.end(), Allowed{"goproxy.env.example", 443, Scheme::kHttps}) != got.end());
  CHECK(std::find(got.begin(), got.end(), Allowed{"team.example", 443, Scheme::kHttps}) != got.end());
  unsetenv("GOPROXY");
  unsetenv("CARGO_REGISTRIES_TEAM_INDEX");
}
