// The default allow list: what a sandbox may reach when its kit or request says nothing else.
//
// It is built, never hard-coded, from two sources:
//  (a) the well-known git hosts in one table (git_host_rules()): github.com and its API, archive
//      and content hosts (api.github.com, codeload.github.com, *.githubusercontent.com),
//      gitlab.com, bitbucket.org and codeberg.org — https on 443, and for the four main hosts
//      ssh (a non-TLS CONNECT tunnel) on 22;
//  (b) the package sources THIS HOST is already configured to use, read at run time from its
//      configuration files and environment (package_source_rules()):
//        apt    one-line `deb URI suite ...` files (sources.list, sources.list.d/*.list) and
//               deb822 `URIs:` fields (sources.list.d/*.sources; stanzas with `Enabled: no`
//               are skipped)
//        npm    `registry=` and `@scope:registry=` lines in npmrc files; $NPM_CONFIG_REGISTRY
//        pip    `index-url` / `extra-index-url` in pip.conf files; $PIP_INDEX_URL,
//               $PIP_EXTRA_INDEX_URL
//        cargo  `index = ...` and `registry = ...` in cargo config files ([registries.*],
//               [source.*] replacement); $CARGO_REGISTRIES_<NAME>_INDEX
//        Go     $GOPROXY entries (not `direct` or `off`)
//      Each URL becomes an allow rule for exactly its host, on its port and scheme. `file:`,
//      `cdrom:` and similar local sources are skipped; for `mirror+` sources only the host of
//      the mirror list itself is known and allowed (noted). The file paths are parameters
//      (system_package_source_files() gives the usual places) so tests use temp files.
// Nothing on the list reaches private or loopback addresses: the address gate (rules.h) still
// applies. A policy with "defaultAllow": false (policy_json.h) replaces the list with its own
// rules; otherwise with_default_allow() appends it, and the policy's deny rules win over it.
//
// Reads files (blocking, small, bounded at 1 MiB each): call at sandbox creation from a worker
// thread or at start-up, not on the loop for every request.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "server/egress/policy/rules.h"

namespace lockroom::egress {

struct PackageSourceFiles {
  std::vector<std::filesystem::path> apt_one_line;    // sources.list style files
  std::vector<std::filesystem::path> apt_directories;  // *.list and *.sources inside
  std::vector<std::filesystem::path> npmrc;
  std::vector<std::filesystem::path> pip_conf;
  std::vector<std::filesystem::path> cargo_config;
};

// The usual places under `etc` (normally /etc) and the user's `home`.
PackageSourceFiles system_package_source_files(const std::filesystem::path& etc, const std::filesystem::path& home);

using Environment = std::map<std::string, std::string>;
// The variables package_source_rules() reads, taken from this process's environment.
Environment package_source_environment();

struct DefaultAllow {
  std::vector<Rule> rules;
  std::vector<std::string> notes;  // what was read, skipped and why; for `lockroom doctor` and logs
};

std::vector<Rule> git_host_rules();
DefaultAllow package_source_rules(const PackageSourceFiles& files, const Environment& environment);
// git_host_rules() followed by package_source_rules(), duplicates removed.
DefaultAllow default_allow_list(const PackageSourceFiles& files, const Environment& environment);

}  // namespace lockroom::egress
