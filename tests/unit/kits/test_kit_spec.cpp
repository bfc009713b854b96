// Reading kit.yaml (server/kits/kit_spec.*).
#include <catch2/catch.hpp>

#include "server/kits/kit_spec.h"

using lockroom::kits::parse_kit;

namespace {

std::string error_of(const std::string& text) {
  auto kit = parse_kit(text, "kit.yaml");
  return kit ? std::string("(no error)") : kit.error().message;
}

}  // namespace

TEST_CASE("a full kit reads into its typed fields", "[kits][spec]") {
  auto kit = parse_kit(R"(name: node
description: Node.js and npm
extends: github
packages: [nodejs, npm]
env:
  NPM_CONFIG_FUND: "false"
  DEBUG: 1
files:
  - {path: /root/.npmrc, content: "fund=false\n", mode: 0600}
  - path: /etc/motd
    content: hi
setup:
  - npm ci
  - {run: make deps, cwd: /workspace/sub/, timeoutSeconds: 900}
services:
  - {name: db, run: redis-server, cwd: /}
network:
  rules: [{action: allow, host: registry.npmjs.org, ports: [443]}]
  defaultAllow: false
secrets:
  - name: npm_token
    from: {env: NPM_TOKEN}
    hosts: [registry.npmjs.org]
    inject: {header: Authorization, value: "Bearer {value}"}
workspace: {withhold: ["*.pem"], allow: [.env.example]}
resources: {memoryMiB: 1024}
)",
                      "kit.yaml");
  INFO((kit ? "" : kit.error().message));
  REQUIRE(kit);
  CHECK(kit->name == "node");
  CHECK(kit->extends == std::vector<std::string>{"github"});
  CHECK(kit->packages == std::vector<std::string>{"nodejs", "npm"});
  CHECK(kit->env.at("NPM_CONFIG_FUND") == "false");
  CHECK(kit->env.at("DEBUG") == "1");
  REQUIRE(kit->files.size() == 2);
  CHECK(kit->files[0].mode == 0600);
  CHECK(kit->files[0].content == "fund=false\n");
  CHECK(kit->files[1].mode == 0644);
  REQUIRE(kit->setup.size() == 2);
  CHECK(kit->setup[0].run == "npm ci");
  CHECK(kit->setup[0].cwd == "/workspace");
  CHECK(kit->setup[1].cwd == "/workspace/sub");
  CHECK(kit->setup[1].timeout_seconds == 900);
  REQUIRE(kit->services.size() == 1);
  CHECK(kit->services[0].cwd == "/");
  REQUIRE(kit->network);
  CHECK(kit->network->rules.size() == 1);
  CHECK_FALSE(kit->network->use_default_allow);
  REQUIRE(kit->secrets.size() == 1);
  CHECK(kit->secrets[0].sentinel() == "LOCKROOM_SECRET_NPM_TOKEN");
  CHECK(kit->withhold == std::vector<std::string>{"*.pem"});
  CHECK(kit->resources.memory_mib == 1024);
  CHECK_FALSE(kit->resources.cpus);
}

TEST_CASE("errors name the file, line, column and field", "[kits][spec]") {
  CHECK(error_of("name: x\nbogus: 1\n") ==
        "kit.yaml:2:1: bogus: is not a known field (known: name, description, extends, packages, npm, env, files, setup, services, network, secrets, workspace, resources)");
  CHECK(error_of("description: no name\n") == "kit.yaml:1:1: name: is required");
  CHECK(error_of("name: Node\n") == "kit.yaml:1:1: name: must be lower-case letters, digits and '-' (at most 64), got \"Node\"");
  CHECK(error_of("name: x\nnetwork:\n  rules:\n    - {action: allow, host: \"exa mple.com\"}\n").rfind("kit.yaml:4:", 0) == 0);
  CHECK(error_of("name: x\nfiles:\n  - {path: etc/x, content: a}\n") ==
        "kit.yaml:3:6: files[0].path: must be an absolute path in the guest, got \"etc/x\"");
  CHECK(error_of("name: x\nfiles:\n  - {path: /etc/../root/x, content: a}\n").find("must not contain \".\" or \"..\"") != std::string::npos);
  CHECK(error_of("name: x\nfiles:\n  - {path: /a, content: a, mode: 4755}\n").find("setuid") != std::string::npos);
  CHECK(error_of("name: x\nfiles:\n  - {path: /a, content: a, mode: 0999}\n").find("octal digits") != std::string::npos);
  CHECK(error_of("name: x\nfiles:\n  - {path: /a, content: a}\n  - {path: /a/, content: b}\n").find("written twice") != std::string::npos);
  CHECK(error_of("name: x\nenv: {1BAD: x}\n") == "kit.yaml:2:7: env.1BAD: is not a valid environment variable name");
  CHECK(error_of("name: x\nenv: {LOCKROOM_X: y}\n").find("lockroom's own") != std::string::npos);
  CHECK(error_of("name: x\npackages: [Node_JS]\n") == "kit.yaml:2:12: packages[0]: \"Node_JS\" is not a Debian package name");
  CHECK(error_of("name: x\nsetup: [{cwd: /}]\n").find("setup[0].run: is required") != std::string::npos);
  CHECK(error_of("name: x\nresources: {memoryMiB: 0}\n").find("resources.memoryMiB: must be between 1 and") != std::string::npos);
  CHECK(error_of("name: x\nservices: [{name: a, run: x}, {name: a, run: y}]\n").find("used twice") != std::string::npos);
  CHECK(error_of("name: x\nsecrets: [{name: t, from: {env: T}}]\n").find("secrets[0]") != std::string::npos);
}
