// KitSpec: one kit file (kit.yaml), read and validated.
//
// A kit makes the guest a real place to work. It is declarative and stackable:
//
//   name: node                      # required: lower-case letters, digits and '-'
//   description: Node.js and npm    # optional, shown by `lockroom kit ls`
//   extends: [github]               # kits applied before this one
//   packages: [nodejs, npm]         # Debian packages added to the guest image
//   npm: ["@zed-industries/claude-agent-acp@0.23.1"]   # npm packages, fetched on the host (npm_spec.h)
//   env: {NPM_CONFIG_UPDATE_NOTIFIER: "false"}
//   files:                          # written before setup; absolute guest paths
//     - {path: /root/.npmrc, content: "fund=false\n", mode: 0600}
//   setup:                          # run in order once the workspace is in; each must exit 0
//     - npm ci                      #   text: a shell command run in /workspace
//     - {run: make deps, cwd: /workspace/sub, timeoutSeconds: 900}
//   services:                       # started after setup and left running
//     - {name: db, run: "redis-server --port 6380", cwd: /}
//   network: {rules: [{action: allow, host: registry.npmjs.org, ports: [443]}]}   # as sandbox/create
//   secrets: [{name: npm_token, from: {env: NPM_TOKEN}, hosts: [registry.npmjs.org],
//              inject: {header: Authorization, value: "Bearer {value}"}}]          # as sandbox/create
//   workspace: {withhold: ["*.pem"], allow: [".env.example"]}   # secret patterns for the snapshot
//   resources: {memoryMiB: 1024}    # the least this kit needs; the request may ask for more
//
// Unknown fields are errors. Every error names the file, line and column (YamlDocument::locate).
// Pure; no I/O (a relative `npm: [file:…]` path is made absolute against the kit file's folder
// and the working directory, without reading anything).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "server/common/result.h"
#include "server/egress/policy/rules.h"
#include "server/egress/policy/secrets.h"
#include "server/kits/yaml_document.h"

namespace lockroom::kits {

constexpr std::size_t kMaxKitFiles = 256;
constexpr std::size_t kMaxKitFileBytes = 1 << 20;
constexpr std::size_t kMaxKitCommands = 64;
constexpr std::size_t kMaxKitPackages = 256;
constexpr std::size_t kMaxKitEnv = 256;

// Who a kit's file, command or service belongs to in the guest: the unprivileged user guest
// programs run as (`agent`), or root (`user: root` in kit.yaml).
enum class KitUser { kAgent, kRoot };

// A file's owner when kit.yaml does not say: the agent user inside its home and the workspace,
// root everywhere else (/etc, /usr/local...).
KitUser default_file_owner(const std::string& guest_path);

struct KitFile {
  std::string path;  // absolute, normalised, no ".." components
  std::string content;
  std::uint32_t mode = 0644;
  KitUser user = KitUser::kRoot;
  friend bool operator==(const KitFile&, const KitFile&) = default;
};

struct KitCommand {
  std::string run;  // a shell command line (sh -c)
  std::string cwd = "/workspace";
  int timeout_seconds = 600;
  KitUser user = KitUser::kAgent;
  std::string kit;  // the kit it came from (set when kits are merged), for messages
  friend bool operator==(const KitCommand&, const KitCommand&) = default;
};

struct KitService {
  std::string name;
  std::string run;
  std::string cwd = "/workspace";
  KitUser user = KitUser::kAgent;
  std::string kit;
  friend bool operator==(const KitService&, const KitService&) = default;
};

struct KitResources {
  std::optional<int> cpus;
  std::optional<int> memory_mib;
  std::optional<int> disk_mib;
  std::optional<int> timeout_seconds;
  friend bool operator==(const KitResources&, const KitResources&) = default;
};

struct KitSpec {
  std::string name;
  std::string description;
  std::string source;  // the file it was read from (for messages)
  std::vector<std::string> extends;
  std::vector<std::string> packages;
  std::vector<std::string> npm;  // normalised npm specs (npm_spec.h): file: paths absolute
  std::map<std::string, std::string> env;
  std::vector<KitFile> files;
  std::vector<KitCommand> setup;
  std::vector<KitService> services;
  std::optional<egress::Policy> network;
  std::vector<egress::Secret> secrets;
  std::vector<std::string> withhold;
  std::vector<std::string> allow;
  KitResources resources;
};

bool valid_kit_name(const std::string& name);

// Reads a parsed kit file; errors are located in `doc` ("kit.yaml:14:9: network.rules[2]...").
Result<KitSpec> read_kit(const YamlDocument& doc);
// parse_yaml + read_kit.
Result<KitSpec> parse_kit(std::string_view text, const std::string& file);

}  // namespace lockroom::kits
