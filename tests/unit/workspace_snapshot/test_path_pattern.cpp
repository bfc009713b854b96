// Secret patterns, the secret filter and the size-limit messages: pure logic, no files.
#include <catch2/catch.hpp>

#include "server/workspace/snapshot/path_pattern.h"
#include "server/workspace/snapshot/secret_policy.h"
#include "server/workspace/snapshot/snapshot_limits.h"

using namespace lockroom;
using namespace lockroom::workspace::snapshot;

namespace {
bool matches(const char* pattern, const char* path) {
  auto p = PathPattern::parse(pattern);
  REQUIRE(p.ok());
  return p->matches(split_path(path));
}
}  // namespace

TEST_CASE("path patterns match like gitignore, at any depth unless anchored") {
  CHECK(matches("*.pem", "server.pem"));
  CHECK(matches("*.pem", "deploy/certs/server.pem"));
  CHECK(matches("*.pem", ".hidden.pem"));
  CHECK_FALSE(matches("*.pem", "server.pem.txt"));
  CHECK(matches(".env", "app/.env"));
  CHECK_FALSE(matches(".env", "app/.envrc"));
  CHECK(matches("id_rsa*", "home/.ssh/id_rsa_work"));
  CHECK(matches(".aws/credentials", ".aws/credentials"));
  CHECK(matches(".aws/credentials", "home/me/.aws/credentials"));
  CHECK_FALSE(matches(".aws/credentials", "aws/credentials"));
  CHECK(matches("/secrets.txt", "secrets.txt"));
  CHECK_FALSE(matches("/secrets.txt", "sub/secrets.txt"));
  CHECK(matches("service-account*.json", "gcp/service-account-prod.json"));
  CHECK(matches("svc-[0-9].json", "svc-7.json"));
  CHECK_FALSE(matches("svc-[0-9].json", "svc-x.json"));
}

TEST_CASE("a directory pattern takes every file under it, a plain name also matches a directory") {
  CHECK(matches("private/", "private/a.txt"));
  CHECK(matches("private/", "x/private/deep/b.txt"));
  CHECK_FALSE(matches("private/", "private"));  // a file named like the directory
  CHECK(matches("private", "private"));
  CHECK(matches("private", "private/a.txt"));
  CHECK(matches("config/**/token", "config/token"));
  CHECK(matches("config/**/token", "config/a/b/token"));
  CHECK_FALSE(matches("config/**/token", "config/a/b/token2"));
  CHECK(matches("/build/**", "build/x/y"));
}

TEST_CASE("invalid patterns are refused with the pattern named") {
  for (const char* bad : {"", "!keep.env", "a//b", "../x", "/", "a/./b"}) {
    auto p = PathPattern::parse(bad);
    REQUIRE_FALSE(p.ok());
    CHECK(p.error().code == ErrorCode::kInvalidInput);
    CHECK(p.error().message.find("\"" + std::string(bad) + "\"") != std::string::npos);
  }
}

TEST_CASE("the default secret patterns withhold the usual suspects, but not public keys") {
  auto filter = SecretFilter::compile({});
  REQUIRE(filter.ok());
  for (const char* secret :
       {".env", "web/.env.local", "tls/server.pem", "server.key", ".ssh/id_rsa", "id_ed25519", "id_ecdsa_sk",
        ".netrc", "_netrc", ".npmrc", ".pypirc", ".git-credentials", ".aws/credentials", ".aws/config",
        ".docker/config.json", ".kube/config", "cert.p12", "cert.pfx", "app.keystore", "release.jks",
        "credentials.json", "service-account-ci.json", ".terraformrc", "infra/terraform.tfstate",
        "infra/terraform.tfstate.backup", "vault.gpg", "keys/server.ppk", ".pgpass", "home/.my.cnf", ".vault-token",
        ".s3cfg", ".boto", ".dockercfg", ".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials",
        ".config/gh/hosts.yml", ".config/gcloud/credentials.db", ".config/gcloud/legacy_credentials/me/adc.json",
        "gcp/application_default_credentials.json", ".azure/msal_token_cache.json", ".azure/azureProfile.json",
        "prod.tfvars", "env/prod.auto.tfvars", "infra/secrets.tfvars.json"}) {
    INFO(secret);
    CHECK(filter->withheld(secret));
  }
  for (const char* ordinary : {"README.md", ".ssh/id_rsa.pub", "id_ed25519.pub", "src/env.ts", ".envrc",
                               "docker/config.json", "keys/public.txt", "main.tf", "variables.tf", ".cargo/config.toml",
                               "Cargo.toml", ".config/gh/config.yml", ".config/gcloudish", "azure/main.bicep", "my.cnf",
                               "tfvars.md"}) {
    INFO(ordinary);
    CHECK_FALSE(filter->withheld(ordinary));
  }
}

TEST_CASE("extra patterns add, allow patterns win, replace_defaults drops the table") {
  SecretPolicy policy;
  policy.withhold = {"*.sqlite", "private/"};
  policy.allow = {".env.example", "private/README.md"};
  auto filter = SecretFilter::compile(policy);
  REQUIRE(filter.ok());
  CHECK(filter->withheld("data/app.sqlite"));
  CHECK(filter->withheld("private/notes.txt"));
  CHECK_FALSE(filter->withheld("private/README.md"));
  CHECK(filter->withheld(".env.production"));
  CHECK_FALSE(filter->withheld(".env.example"));
  CHECK_FALSE(filter->withheld("app/.env.example"));

  policy.replace_defaults = true;
  auto only_extra = SecretFilter::compile(policy);
  REQUIRE(only_extra.ok());
  CHECK_FALSE(only_extra->withheld(".env"));
  CHECK(only_extra->withheld("data/app.sqlite"));

  SecretPolicy pub;
  pub.withhold = {"*.pub"};  // default exceptions do not override the caller's own patterns
  auto with_pub = SecretFilter::compile(pub);
  REQUIRE(with_pub.ok());
  CHECK(with_pub->withheld("id_rsa.pub"));

  SecretPolicy bad;
  bad.allow = {"!x"};
  auto refused = SecretFilter::compile(bad);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("\"!x\"") != std::string::npos);
}

namespace {
// withheld_in() as the scanner uses it: the verdict carried down folder by folder.
bool withheld_folder_by_folder(const SecretFilter& filter, const std::string& path) {
  const auto components = split_path(path);
  SecretFilter::FolderMatches folder;
  std::vector<std::string_view> prefix;
  for (std::size_t i = 0; i + 1 < components.size(); ++i) {
    prefix.push_back(components[i]);
    folder = filter.enter_folder(folder, prefix);
  }
  return filter.withheld_in(folder, components);
}
}  // namespace

TEST_CASE("the folder-by-folder secret verdict is withheld()'s, for every kind of pattern") {
  SecretPolicy policy;
  policy.withhold = {"*.sqlite", "private/", "/top/", "deep/**/x.txt", "a/b", "/rooted.txt", "cache", "**/logs/*.log"};
  policy.allow = {".env.example", "private/README.md", "open/", "keep/**", "public.key"};
  SecretPolicy replaced = policy;
  replaced.replace_defaults = true;
  const std::vector<std::string> paths = {
      ".env", "web/.env", "web/.env.example", "web/.env.local", "open/.env", "x/open/y/.env", "server.key",
      "public.key", "keys/public.key", "id_rsa", ".ssh/id_rsa.pub", "id_rsa.pub/inner", ".aws/credentials",
      "home/.aws/credentials", "aws/credentials", ".aws/credentials/inside", "db/app.sqlite", "app.sqlite/x",
      "private", "private/notes.txt", "x/private/deep/b.txt", "private/README.md", "top", "top/a", "x/top/a",
      "deep/x.txt", "deep/1/2/x.txt", "x/deep/y/x.txt", "a/b", "z/a/b", "a/b/c", "a/c", "rooted.txt",
      "sub/rooted.txt", "cache", "cache/blob", "src/cache/blob", "logs/a.log", "x/logs/a.log", "x/logs/a.txt",
      "keep/.env", "keep/a/server.pem", "README.md", "src/main.cpp", "terraform.tfstate.d/prod", "vault.gpg",
      "service-account-ci.json", "x/service-account.json/y"};
  for (const SecretPolicy* p : {&policy, &replaced}) {
    auto filter = SecretFilter::compile(*p);
    REQUIRE(filter.ok());
    std::size_t withheld = 0;
    for (const auto& path : paths) {
      INFO(path << (p->replace_defaults ? " (defaults replaced)" : ""));
      CHECK(withheld_folder_by_folder(*filter, path) == filter->withheld(path));
      withheld += filter->withheld(path) ? 1 : 0;
    }
    CHECK(withheld > 10);  // both answers are exercised
    CHECK(withheld < paths.size() - 10);
  }
}

TEST_CASE("the single-file limit names the largest files and what to do") {
  std::vector<SizedPath> files = {{"small.txt", 10}, {"data/huge.bin", 300}, {"data/big.bin", 200}, {"ok.bin", 100}};
  SnapshotLimits limits;
  limits.max_file_bytes = 100;
  auto r = check_limits(files, limits);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kLimitExceeded);
  const auto& m = r.error().message;
  INFO(m);
  CHECK(m.find("2 files are larger than the 100 bytes single-file limit") != std::string::npos);
  CHECK(m.find("data/huge.bin (300 bytes), data/big.bin (200 bytes)") != std::string::npos);
  CHECK(m.find("ok.bin") == std::string::npos);
  CHECK(m.find(".gitignore") != std::string::npos);
  CHECK(m.find("raise the limit") != std::string::npos);
}

TEST_CASE("the file-count limit names the directories holding the most files") {
  std::vector<SizedPath> files;
  for (int i = 0; i < 30; ++i) files.push_back({"node_modules/pkg" + std::to_string(i % 3) + "/f" + std::to_string(i), 1});
  for (int i = 0; i < 8; ++i) files.push_back({"build/out" + std::to_string(i), 1});
  for (int i = 0; i < 3; ++i) files.push_back({"src/main" + std::to_string(i) + ".c", 1});
  SnapshotLimits limits;
  limits.max_files = 40;
  auto r = check_limits(files, limits);
  REQUIRE_FALSE(r.ok());
  const auto& m = r.error().message;
  INFO(m);
  CHECK(m.find("41 files to snapshot, more than the limit of 40") != std::string::npos);
  CHECK(m.find("node_modules/ (30 files), build/ (8 files), src/ (3 files)") != std::string::npos);
  CHECK(m.find("node_modules/pkg0/") == std::string::npos);  // inside a directory already named

  limits.max_files = 41;
  CHECK(check_limits(files, limits).ok());
}

TEST_CASE("the total-bytes limit names the largest files and directories") {
  std::vector<SizedPath> files = {{"assets/video.mp4", 3 << 20}, {"assets/img.png", 1 << 20}, {"db.sqlite", 2 << 20}};
  SnapshotLimits limits;
  limits.max_total_bytes = 5 << 20;
  auto r = check_limits(files, limits);
  REQUIRE_FALSE(r.ok());
  const auto& m = r.error().message;
  INFO(m);
  CHECK(m.find("add up to 6.0 MiB, more than the 5.0 MiB limit") != std::string::npos);
  CHECK(m.find("assets/video.mp4 (3.0 MiB), db.sqlite (2.0 MiB), assets/img.png (1.0 MiB)") != std::string::npos);
  CHECK(m.find("assets/ (4.0 MiB)") != std::string::npos);
  limits.max_total_bytes = 6 << 20;
  CHECK(check_limits(files, limits).ok());
}
