// A kit's `npm:` list (server/kits/npm_spec.*, kit_spec.cpp, kit_plan.cpp): the two forms it
// accepts, every other form refused with the file, line and column, and stacking as a union in
// which one package at two versions is an error naming both kits.
#include <catch2/catch.hpp>

#include "server/kits/kit_catalog.h"
#include "server/kits/kit_plan.h"
#include "server/kits/npm_spec.h"

using namespace lockroom::kits;

namespace {

std::string error_of(const std::string& text) {
  auto kit = parse_kit(text, "/kits/agent/kit.yaml");
  return kit ? std::string("(no error)") : kit.error().message;
}

}  // namespace

TEST_CASE("kit npm: registry specs and file: tarballs are read, a relative tarball from the kit's folder", "[kits][npm]") {
  auto kit = parse_kit("name: agent\npackages: [nodejs]\nnpm:\n  - \"@zed-industries/claude-agent-acp@0.23.1\"\n  - left-pad\n"
                       "  - typescript@^5.6\n  - file:vendor/tool-1.0.0.tgz\n  - file:/opt/pkgs/x.tar.gz\n",
                       "/kits/agent/kit.yaml");
  INFO((kit ? "" : kit.error().message));
  REQUIRE(kit);
  CHECK(kit->npm == std::vector<std::string>{"@zed-industries/claude-agent-acp@0.23.1", "left-pad", "typescript@^5.6",
                                             "file:/kits/agent/vendor/tool-1.0.0.tgz", "file:/opt/pkgs/x.tar.gz"});
  CHECK(npm_spec_name("@zed-industries/claude-agent-acp@0.23.1") == std::optional<std::string>("@zed-industries/claude-agent-acp"));
  CHECK(npm_spec_name("left-pad") == std::optional<std::string>("left-pad"));
  CHECK_FALSE(npm_spec_name("file:/a/b.tgz"));
  CHECK(npm_spec_file("file:/a/b.tgz") == std::optional<std::filesystem::path>("/a/b.tgz"));
}

TEST_CASE("kit npm: anything but a package name, a version and a tarball is refused, located", "[kits][npm]") {
  CHECK(error_of("name: x\nnpm: [Left-Pad]\n") ==
        "/kits/agent/kit.yaml:2:7: npm[0]: \"Left-Pad\" is not an npm package name (lower-case, optionally @scope/name); write "
        "NAME@VERSION (\"@zed-industries/claude-agent-acp@0.23.1\"; an exact version is best) or file:PATH to an `npm pack` tarball");
  CHECK(error_of("name: x\nnpm:\n  - ok\n  - \"@scope\"\n").rfind("/kits/agent/kit.yaml:4:5: npm[1]: \"@scope\" is not an npm package name", 0) == 0);
  CHECK(error_of("name: x\nnpm: [\"-g\"]\n").find("npm[0]: \"-g\" is not an npm package name") != std::string::npos);
  CHECK(error_of("name: x\nnpm: [\"a@-1\"]\n").find("has a version that is not a version, range or tag") != std::string::npos);
  CHECK(error_of("name: x\nnpm: [\"a@1;rm -rf /\"]\n").find("has a version that is not") != std::string::npos);
  CHECK(error_of("name: x\nnpm: [\"git+https://example.com/a.git\"]\n").find("is not an npm package name") != std::string::npos);
  CHECK(error_of("name: x\nnpm: [\"file:../src\"]\n").find("is not a package tarball (.tgz or .tar.gz") != std::string::npos);
  CHECK(error_of("name: x\nnpm: [\"file:\"]\n").find("names no file") != std::string::npos);
  CHECK(error_of("name: x\nnpm: [a@1.0.0, a@2.0.0]\n") == "/kits/agent/kit.yaml:2:16: npm[1]: \"a\" is already asked for at npm[0]");
  CHECK(error_of("name: x\nnpm: a\n").find("npm: must be a list") != std::string::npos);
  CHECK(error_of("name: x\nnpm: [1]\n").find("npm[0]") != std::string::npos);
}

TEST_CASE("kit npm: stacked kits add up their specs; one package at two versions names both kits", "[kits][npm]") {
  auto base = parse_kit("name: base\nnpm: [\"b@1.0.0\", \"a@2.0.0\"]\n", "kit.yaml");
  auto top = parse_kit("name: top\nextends: base\nnpm: [\"a@2.0.0\", \"c@3.0.0\"]\n", "kit.yaml");
  auto clash = parse_kit("name: clash\nnpm: [\"a@2.1.0\"]\n", "kit.yaml");
  REQUIRE((base && top && clash));
  auto plan = merge_kits({*base, *top});
  REQUIRE(plan);
  CHECK(plan->npm == std::vector<std::string>{"b@1.0.0", "a@2.0.0", "c@3.0.0"});
  CHECK(plan_to_json(*plan)["npm"] == nlohmann::json::array({"b@1.0.0", "a@2.0.0", "c@3.0.0"}));

  auto both = merge_kits({*base, *clash});
  REQUIRE_FALSE(both);
  CHECK(both.error().message ==
        "kits \"base\" and \"clash\" ask for different versions of the npm package \"a\" (\"a@2.0.0\" and \"a@2.1.0\"); keep one");
}

TEST_CASE("kit npm: a set is sorted and de-duplicated; tarballs must be absolute outside a kit file", "[kits][npm]") {
  auto set = normalize_npm_set({"z@1.0.0", "file:/t/a.tgz", "z@1.0.0", "@s/y"});
  REQUIRE(set);
  CHECK(*set == std::vector<std::string>{"@s/y", "file:/t/a.tgz", "z@1.0.0"});
  auto twice = normalize_npm_set({"z", "z-y@1", "z@2"});
  REQUIRE_FALSE(twice);
  CHECK(twice.error().message.find("\"z\" is asked for twice") != std::string::npos);
  auto relative = normalize_npm_set({"file:a.tgz"});
  REQUIRE_FALSE(relative);
  CHECK(relative.error().message.find("must name its tarball by an absolute path") != std::string::npos);
  CHECK_FALSE(valid_npm_name(std::string(215, 'a')));
  CHECK(valid_npm_name("@zed-industries/codex-acp"));
  CHECK_FALSE(valid_npm_name("@/x"));
  CHECK_FALSE(valid_npm_name(".hidden"));
}

TEST_CASE("kit npm: the built-in claude and codex kits read, pinned, with their keys kept on the host", "[kits][npm]") {
  KitCatalog catalog({{builtin_kits_dir(), "built-in"}});
  auto claude = resolve_kits(catalog, {"claude"});
  INFO((claude ? "" : claude.error().message));
  REQUIRE(claude);
  // bash: Claude Code's Bash tool runs its commands with bash, which the base image lacks.
  CHECK(claude->packages == std::vector<std::string>{"nodejs", "bash"});
  REQUIRE(claude->npm.size() == 1);
  CHECK(claude->npm[0].rfind("@zed-industries/claude-agent-acp@", 0) == 0);
  CHECK(claude->env.at("IS_SANDBOX") == "1");
  REQUIRE(claude->secrets.size() == 1);
  CHECK(claude->secrets[0].sentinel() == "LOCKROOM_SECRET_ANTHROPIC_API_KEY");
  REQUIRE(claude->secrets[0].header);
  CHECK(claude->secrets[0].header->header == "x-api-key");
  CHECK(claude->resources.memory_mib >= 1024);

  auto codex = resolve_kits(catalog, {"codex"});
  INFO((codex ? "" : codex.error().message));
  REQUIRE(codex);
  REQUIRE(codex->npm.size() == 1);
  CHECK(codex->npm[0].rfind("@zed-industries/codex-acp@", 0) == 0);
  REQUIRE(codex->secrets.size() == 1);
  REQUIRE(codex->secrets[0].header);
  CHECK(codex->secrets[0].header->value_template == "Bearer {value}");
  // Stacked, both agents' packages and rules add up.
  auto both = resolve_kits(catalog, {"claude", "codex"});
  REQUIRE(both);
  CHECK(both->npm.size() == 2);
  CHECK(both->packages == std::vector<std::string>{"nodejs", "bash"});
}
