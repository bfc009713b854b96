// Reading what npm installed (vm/image/npm_tree.h): the packages asked for, their `bin`
// entries (and the ones refused), the resolved tree from a package-lock, and which programs get
// a node wrapper. Pure.
#include <catch2/catch.hpp>

#include "server/vm/image/npm_tree.h"

namespace img = lockroom::vm::image;
using nlohmann::json;

TEST_CASE("npm tree: bins as a path or a mapping; names and paths that leave the package are refused", "[vm][npm]") {
  auto one = img::npm_package_bins("@zed-industries/claude-agent-acp", json{{"bin", "dist/index.js"}});
  REQUIRE(one);
  CHECK(*one == std::vector<img::NpmBin>{{"claude-agent-acp", "@zed-industries/claude-agent-acp", "dist/index.js"}});
  auto many = img::npm_package_bins("tool", json{{"bin", {{"a", "./bin/a.js"}, {"b", "bin/../lib/b"}}}});
  REQUIRE(many);
  CHECK(*many == std::vector<img::NpmBin>{{"a", "tool", "bin/a.js"}, {"b", "tool", "lib/b"}});
  auto none = img::npm_package_bins("lib", json{{"name", "lib"}});
  REQUIRE(none);
  CHECK(none->empty());

  for (const json& bad : {json{{"bin", {{"../x", "a.js"}}}}, json{{"bin", {{"x", "../../etc/passwd"}}}}, json{{"bin", {{"x", "/bin/sh"}}}},
                          json{{"bin", {{"x", "it's.js"}}}}, json{{"bin", json::array({"a"})}}, json{{"bin", {{"x", 3}}}}}) {
    auto refused = img::npm_package_bins("evil", bad);
    INFO(bad.dump());
    REQUIRE_FALSE(refused);
    CHECK_THAT(refused.error().message, Catch::Contains("the npm package evil has a bin entry"));
  }
}

TEST_CASE("npm tree: the asked packages, the resolved tree and node programs", "[vm][npm]") {
  CHECK(img::npm_installed_names(json{{"dependencies", {{"@a/b", "^1.0.0"}, {"c", "file:../c.tgz"}}}}) == std::vector<std::string>{"@a/b", "c"});
  CHECK(img::npm_installed_names(json::object()).empty());
  json lock = {{"lockfileVersion", 3},
               {"packages",
                {{"", {{"dependencies", {{"a", "1"}}}}},
                 {"node_modules/a", {{"version", "1.0.0"}}},
                 {"node_modules/@s/b", {{"version", "2.1.0"}}},
                 {"node_modules/a/node_modules/@s/b", {{"version", "1.9.0"}}}}}};
  CHECK(img::npm_resolved_packages(lock) == std::vector<std::string>{"@s/b@1.9.0", "@s/b@2.1.0", "a@1.0.0"});
  // Optional packages for other platforms are in the lock but not on disk.
  auto on_disk = [](const std::string& path) { return path != "node_modules/@s/b"; };
  CHECK(img::npm_resolved_packages(lock, on_disk) == std::vector<std::string>{"@s/b@1.9.0", "a@1.0.0"});
  CHECK(img::npm_bin_runs_under_node("#!/usr/bin/env node\nconsole.log(1)"));
  CHECK(img::npm_bin_runs_under_node("#!/usr/bin/node\n"));
  CHECK(img::npm_bin_runs_under_node("#!/usr/bin/env -S node --no-warnings\n"));
  CHECK_FALSE(img::npm_bin_runs_under_node("#!/bin/sh\nnode x.js\n"));
  CHECK_FALSE(img::npm_bin_runs_under_node("#!/usr/bin/env nodejs-like\n"));
  CHECK_FALSE(img::npm_bin_runs_under_node("\x7f" "ELF"));
  CHECK(img::npm_node_wrapper({"codex-acp", "@zed-industries/codex-acp", "bin/codex-acp.js"}) ==
        "#!/bin/sh\n# codex-acp from the npm package @zed-industries/codex-acp (a kit's npm: layer, made by lockroom)\n"
        "exec node '/usr/local/lib/node_modules/@zed-industries/codex-acp/bin/codex-acp.js' \"$@\"\n");
}
