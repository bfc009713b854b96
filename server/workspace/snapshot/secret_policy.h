// Which workspace files are secrets and stay on the host: the default table, the per-request
// options, and the compiled filter the scanner asks for every file. Pure logic, no I/O.
//
// Patterns are gitignore-style (path_pattern.h) and match at any depth unless they start with '/'.
// A file is withheld when it matches
//   (a default pattern and none of the default exceptions)  or  (an extra `withhold` pattern),
// and it does not match an `allow` pattern: an explicit allow always wins (e.g. `.env.example`).
// Every withheld path is reported to the user in the snapshot result.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "server/common/result.h"
#include "server/workspace/snapshot/path_pattern.h"

namespace lockroom::workspace::snapshot {

struct DefaultSecretPattern {
  std::string_view pattern;
  std::string_view what;
};

// The defaults, withheld unless the request replaces them or allows a path back.
//
// | pattern               | what it holds                                     |
// |-----------------------|---------------------------------------------------|
// | .env                  | dotenv: API keys, database passwords              |
// | .env.*                | dotenv variants (.env.local, .env.production, …)  |
// | *.pem                 | TLS / SSH private keys and certificates           |
// | *.key                 | private keys                                      |
// | id_rsa*               | SSH private keys (`*.pub` public halves excepted) |
// | id_dsa*               | SSH private keys (`*.pub` excepted)               |
// | id_ecdsa*             | SSH private keys (`*.pub` excepted)               |
// | id_ed25519*           | SSH private keys (`*.pub` excepted)               |
// | .netrc, _netrc        | machine logins and passwords                      |
// | .npmrc                | npm registry tokens                               |
// | .pypirc               | PyPI upload credentials                           |
// | .git-credentials      | git credential store                              |
// | .aws/credentials      | AWS access keys                                   |
// | .aws/config           | AWS profiles (may hold SSO / role settings)       |
// | .docker/config.json   | container registry logins                         |
// | .kube/config          | Kubernetes cluster credentials                    |
// | *.p12, *.pfx          | PKCS#12 key bundles                               |
// | *.keystore, *.jks     | Java / Android key stores                         |
// | credentials.json      | Google and other OAuth client secrets             |
// | service-account*.json | cloud service-account keys                        |
// | .terraformrc          | Terraform Cloud tokens                            |
// | terraform.tfstate*    | Terraform state (holds provider secrets in clear) |
// | *.gpg                 | encrypted secrets and private keyrings            |
// | *.ppk                 | PuTTY private keys                                |
// | .pgpass               | PostgreSQL passwords                              |
// | .my.cnf               | MySQL client passwords                            |
// | .vault-token          | HashiCorp Vault token                             |
// | .s3cfg                | s3cmd access keys                                 |
// | .boto                 | boto / gsutil credentials                         |
// | .dockercfg            | container registry logins (old format)            |
// | .cargo/credentials*   | crates.io token (credentials, credentials.toml)   |
// | .gem/credentials      | RubyGems API key                                  |
// | .config/gh/hosts.yml  | GitHub CLI tokens                                 |
// | .config/gcloud/       | gcloud credentials and access tokens              |
// | application_default_credentials.json | Google application default creds   |
// | .azure/               | Azure CLI tokens and profiles                     |
// | *.tfvars, *.tfvars.json | Terraform variables (often hold secrets)        |
inline constexpr std::array<DefaultSecretPattern, 41> kDefaultSecretPatterns{{
    {".env", "dotenv file"},
    {".env.*", "dotenv file"},
    {"*.pem", "private key or certificate"},
    {"*.key", "private key"},
    {"id_rsa*", "SSH private key"},
    {"id_dsa*", "SSH private key"},
    {"id_ecdsa*", "SSH private key"},
    {"id_ed25519*", "SSH private key"},
    {".netrc", "login credentials"},
    {"_netrc", "login credentials"},
    {".npmrc", "npm token"},
    {".pypirc", "PyPI credentials"},
    {".git-credentials", "git credentials"},
    {".aws/credentials", "AWS credentials"},
    {".aws/config", "AWS configuration"},
    {".docker/config.json", "registry logins"},
    {".kube/config", "Kubernetes credentials"},
    {"*.p12", "PKCS#12 key bundle"},
    {"*.pfx", "PKCS#12 key bundle"},
    {"*.keystore", "key store"},
    {"*.jks", "Java key store"},
    {"credentials.json", "OAuth client secret"},
    {"service-account*.json", "service-account key"},
    {".terraformrc", "Terraform token"},
    {"terraform.tfstate*", "Terraform state"},
    {"*.gpg", "encrypted secret or keyring"},
    {"*.ppk", "PuTTY private key"},
    {".pgpass", "PostgreSQL passwords"},
    {".my.cnf", "MySQL credentials"},
    {".vault-token", "Vault token"},
    {".s3cfg", "S3 credentials"},
    {".boto", "boto credentials"},
    {".dockercfg", "registry logins"},
    {".cargo/credentials*", "crates.io token"},
    {".gem/credentials", "RubyGems key"},
    {".config/gh/hosts.yml", "GitHub CLI token"},
    {".config/gcloud/", "gcloud credentials"},
    {"application_default_credentials.json", "Google credentials"},
    {".azure/", "Azure credentials"},
    {"*.tfvars", "Terraform variables"},
    {"*.tfvars.json", "Terraform variables"},
}};

// Default exceptions: SSH public halves. They only take a path back from the defaults, never from
// `withhold`.
inline constexpr std::array<std::string_view, 4> kDefaultSecretExceptions{
    {"id_rsa*.pub", "id_dsa*.pub", "id_ecdsa*.pub", "id_ed25519*.pub"}};

struct SecretPolicy {
  std::vector<std::string> withhold;  // extra patterns, added to the defaults
  std::vector<std::string> allow;     // patterns put back; an allow wins over every withhold
  bool replace_defaults = false;      // true: only `withhold` applies, the table above does not
};

class SecretFilter {
 public:
  // Fails with kInvalidInput naming the first bad pattern.
  static Result<SecretFilter> compile(const SecretPolicy& policy);

  // `path` is workspace-relative with '/' separators.
  bool withheld(std::string_view path) const;

  // The same answer, folder by folder: which pattern lists already match a folder or one of its
  // parents (and so every path under it). The scanner computes this once per folder and then
  // matches each file's own name only, instead of re-matching every parent for every file.
  struct FolderMatches {
    bool defaults = false;
    bool default_exceptions = false;
    bool withhold = false;
    bool allow = false;
  };
  // `folder` is the folder's path split on '/' (empty for the workspace root, which matches
  // nothing); `parent` is what enter_folder() gave for its parent folder.
  FolderMatches enter_folder(const FolderMatches& parent, const std::vector<std::string_view>& folder) const;
  // `path` is a file's path split on '/', `folder` what enter_folder() gave for its folder;
  // equal to withheld() of the joined path.
  bool withheld_in(const FolderMatches& folder, const std::vector<std::string_view>& path) const;

 private:
  static bool any_matches(const std::vector<PathPattern>& patterns, const std::vector<std::string_view>& path);
  // Does a pattern match exactly `path` (all of it)? Directory-only patterns are left out unless
  // `path` is a folder.
  static bool any_matches_itself(const std::vector<PathPattern>& patterns, const std::vector<std::string_view>& path,
                                 bool is_folder);

  std::vector<PathPattern> defaults_;
  std::vector<PathPattern> default_exceptions_;
  std::vector<PathPattern> withhold_;
  std::vector<PathPattern> allow_;
};

}  // namespace lockroom::workspace::snapshot
