// Finding, stacking and merging kits (server/kits/kit_catalog.*, kit_plan.*), on real files.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "server/kits/kit_plan.h"
#include "tests/support/temp_dir.h"

namespace fs = std::filesystem;
using namespace lockroom::kits;
using lockroom::testing::TempDir;

TEST_CASE("kits are found by name in the search path, first root wins, and by file path", "[kits][catalog]") {
  TempDir a, b;
  a.write("node/kit.yaml", "name: node\ndescription: from a\n");
  b.write("node.yaml", "name: node\ndescription: from b\n");
  b.write("py.yaml", "name: py\n");
  b.write("misnamed/kit.yaml", "name: other\n");
  KitCatalog catalog({{a.path(), "first"}, {b.path(), "second"}});

  auto node = catalog.load("node");
  REQUIRE(node);
  CHECK(node->description == "from a");
  auto loc = catalog.find("py");
  REQUIRE(loc);
  CHECK(loc->origin == "second");

  auto listed = catalog.list();
  REQUIRE(listed.size() == 3);
  CHECK(listed[0].name == "misnamed");
  CHECK(listed[1].name == "node");
  CHECK(listed[1].origin == "first");
  CHECK(listed[2].name == "py");

  auto by_path = catalog.load((b.path() / "node.yaml").string());
  REQUIRE(by_path);
  CHECK(by_path->description == "from b");

  auto mismatch = catalog.load("misnamed");
  REQUIRE_FALSE(mismatch);
  CHECK(mismatch.error().message.find("named \"other\" but was found as \"misnamed\"") != std::string::npos);

  auto missing = catalog.find("rust");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == lockroom::ErrorCode::kNotFound);
  CHECK(missing.error().message.find(a.path().string() + " (first)") != std::string::npos);
  CHECK(missing.error().message.find("known kits: misnamed, node, py") != std::string::npos);
}

TEST_CASE("the standard search path puts LOCKROOM_KIT_PATH, the workspace and the user before the built-ins", "[kits][catalog]") {
  static const char* kEnv[][2] = {{"LOCKROOM_KIT_PATH", "/k1::/k2"}, {"XDG_CONFIG_HOME", "/cfg"}, {"HOME", "/home/u"}};
  auto env = [](const char* name) -> const char* {
    for (const auto& kv : kEnv)
      if (std::string(name) == kv[0]) return kv[1];
    return nullptr;
  };
  auto roots = KitCatalog::standard("/ws", env).roots();
  REQUIRE(roots.size() >= 4);
  CHECK(roots[0].dir == "/k1");
  CHECK(roots[1].dir == "/k2");
  CHECK(roots[2].dir == "/ws/.lockroom/kits");
  CHECK(roots[3].dir == "/cfg/lockroom/kits");
  CHECK(roots.back().origin == "built-in");
}

TEST_CASE("an editor's environment, not this process's, names the search path when given", "[kits][catalog]") {
  std::map<std::string, std::string> editor{{"LOCKROOM_KIT_PATH", "/editor-kits"}, {"HOME", "/home/editor"}};
  auto roots = KitCatalog::standard_for("", &editor).roots();
  REQUIRE(roots.size() >= 3);
  CHECK(roots[0].dir == "/editor-kits");
  CHECK(roots[0].origin == "LOCKROOM_KIT_PATH");
  CHECK(roots[1].dir == "/home/editor/.config/lockroom/kits");  // no XDG_CONFIG_HOME in the editor's
  std::map<std::string, std::string> bare;
  auto none = KitCatalog::standard_for("", &bare).roots();
  REQUIRE_FALSE(none.empty());
  CHECK(none.front().origin == "built-in");  // nothing of this process's environment leaks in
}

TEST_CASE("a stack is ordered dependencies first, each kit once, and merged", "[kits][plan]") {
  TempDir d;
  d.write("base.yaml", "name: base\nenv: {A: base, B: base}\nsetup: [echo base]\nfiles: [{path: /f, content: base}]\n"
                       "network: {rules: [{action: allow, host: a.example}]}\nresources: {memoryMiB: 768, cpus: 2}\n"
                       "workspace: {withhold: ['*.pem']}\n");
  d.write("left.yaml", "name: left\nextends: base\nenv: {A: left}\nsetup: [echo left]\npackages: [git]\n"
                       "secrets: [{name: tok, from: {env: TOK}, hosts: [a.example]}]\n");
  d.write("right.yaml", "name: right\nextends: [base]\nsetup: [echo right]\npackages: [git, curl]\nfiles: [{path: /f, content: right}]\n"
                        "network: {rules: [{action: deny, host: b.example}], unmatched: ask, defaultAllow: false}\nresources: {memoryMiB: 1024}\n"
                        "secrets: [{name: tok, from: {env: TOK}, hosts: [a.example]}]\n");
  KitCatalog catalog({{d.path(), "test"}});
  auto plan = resolve_kits(catalog, {"left", "right"});
  INFO((plan ? "" : plan.error().message));
  REQUIRE(plan);
  CHECK(plan->kits == std::vector<std::string>{"base", "left", "right"});
  CHECK(plan->env.at("A") == "left");
  CHECK(plan->env.at("B") == "base");
  REQUIRE(plan->setup.size() == 3);
  CHECK(plan->setup[0].run == "echo base");
  CHECK(plan->setup[2].run == "echo right");
  CHECK(plan->packages == std::vector<std::string>{"git", "curl"});
  REQUIRE(plan->files.size() == 1);
  CHECK(plan->files[0].content == "right");
  REQUIRE(plan->network);
  CHECK(plan->network->rules.size() == 2);
  CHECK(plan->network->when_unmatched == lockroom::egress::WhenUnmatched::kAsk);
  CHECK_FALSE(plan->network->use_default_allow);
  CHECK(plan->secrets.size() == 1);
  CHECK(plan->resources.memory_mib == 1024);
  CHECK(plan->resources.cpus == 2);
  CHECK(plan->withhold == std::vector<std::string>{"*.pem"});
  json shown = plan_to_json(*plan);
  CHECK(shown["kits"] == json::array({"base", "left", "right"}));
  CHECK(shown["secrets"][0]["sentinel"] == "LOCKROOM_SECRET_TOK");
}

TEST_CASE("cycles, conflicting definitions and missing parents are errors that say where", "[kits][plan]") {
  TempDir d;
  d.write("a.yaml", "name: a\nextends: b\n");
  d.write("b.yaml", "name: b\nextends: a\n");
  d.write("s1.yaml", "name: s1\nservices: [{name: db, run: x}]\nsecrets: [{name: t, from: {env: T}, hosts: [x.example]}]\n");
  d.write("s2.yaml", "name: s2\nservices: [{name: db, run: y}]\n");
  d.write("s3.yaml", "name: s3\nsecrets: [{name: t, from: {env: OTHER}, hosts: [x.example]}]\n");
  d.write("orphan.yaml", "name: orphan\nextends: nowhere\n");
  KitCatalog catalog({{d.path(), "test"}});

  auto cycle = resolve_kits(catalog, {"a"});
  REQUIRE_FALSE(cycle);
  CHECK(cycle.error().message.find("cycle: a -> b -> a") != std::string::npos);

  auto services = resolve_kits(catalog, {"s1", "s2"});
  REQUIRE_FALSE(services);
  CHECK(services.error().message == "kits \"s1\" and \"s2\" both define the service \"db\"");

  auto secrets = resolve_kits(catalog, {"s1", "s3"});
  REQUIRE_FALSE(secrets);
  CHECK(secrets.error().message.find("define the secret \"t\" differently") != std::string::npos);

  auto orphan = resolve_kits(catalog, {"orphan"});
  REQUIRE_FALSE(orphan);
  CHECK(orphan.error().message.find("no kit named \"nowhere\"") != std::string::npos);
  CHECK(orphan.error().message.find("extended by") != std::string::npos);
}
