// Kits with npm packages in a real guest: `packages: [nodejs]` (Debian's node, from the host's
// apt, as test_sandbox_kit_packages.cpp) and `npm: [file:…tgz]`, a tiny package packed with the
// host's `npm pack` and installed ON THE HOST by the host's npm (vm/image/npm_layer.h) into an
// npm layer over the package image. The guest runs the package's program from /usr/local/bin
// under node; npm itself never runs in the guest. The tarball lives at a fixed temp path with
// deterministic bytes, so later runs reuse the cached layer, image and template. Needs the host's
// apt mirror (for nodejs) and npm; it never skips. The second case boots the built-in `claude`
// kit and has the real claude-agent-acp answer ACP `initialize`: it also needs the host's npm to
// reach the registry its configuration names (once; the layer is cached after).
#include <catch2/catch.hpp>

#include <cstdlib>

#include "server/core/kit_request.h"
#include "server/kits/kit_catalog.h"
#include "server/vm/image/npm_image.h"
#include "tests/integration/sandbox_world.h"
#include "tests/support/npm_tarball.h"

using namespace lockroom;
using namespace lockroom::testing;

namespace {

// The test package's tarball, at a path (and with bytes) that stay the same across runs.
std::filesystem::path hello_tarball() {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "lockroom-npm-kit-test";
  return pack_npm_package(dir, "lockroom-hello",
                          {{"lockroom-hello", "bin/hello.js",
                            "#!/usr/bin/env node\nconsole.log('hello from node ' + process.versions.node.split('.')[0] + ', ' + process.argv[2]);\n"}});
}

}  // namespace

TEST_CASE("kit npm: a package installed on the host runs its program under node in a real guest", "[sandbox][kits][npm]") {
  World& w = world();
  // The kit file sits beside the tarball and names it relatively, as a project's kit would.
  std::filesystem::path tarball = hello_tarball();
  auto kit = kits::parse_kit("name: hello\npackages: [nodejs]\nnpm: [\"file:" + tarball.filename().string() +
                                 "\"]\nresources: {memoryMiB: 1024}\n",
                             (tarball.parent_path() / "kit.yaml").string());
  INFO((kit ? "" : kit.error().message));
  REQUIRE(kit);
  auto plan = kits::merge_kits({*kit});
  REQUIRE(plan);
  REQUIRE(core::check_kit_plan_supported(*plan));
  core::CreateRequest request;
  REQUIRE(core::apply_kit_plan(*plan, request));
  core::finish_network(request);
  REQUIRE(request.npm == std::vector<std::string>{"file:" + tarball.string()});
  REQUIRE(request.resources.memory_mib == 1024);

  std::vector<std::string> progress;
  std::optional<Result<core::CreateResult>> created;
  w.manager->create(request, [&](const std::string& line, int) { progress.push_back(line); },
                    [&](Result<core::CreateResult> r) { created = std::move(r); });
  w.run_until([&] { return created.has_value(); }, 900s);
  INFO("create failed (this test needs the host's apt mirror and npm): " << (created->ok() ? std::string() : created->error().message));
  REQUIRE(created->ok());
  std::string sb = (*created)->sandbox_id;

  CHECK_THAT(w.sh(sb, "lockroom-hello guest"), Catch::Matches("hello from node [0-9]+, guest\n"));
  CHECK(w.sh(sb, "command -v lockroom-hello; ls /usr/local/lib/node_modules") == "/usr/local/bin/lockroom-hello\nlockroom-hello\n");
  CHECK(w.sh(sb, "command -v npm || echo no npm in the guest") == "no npm in the guest\n");
  w.destroy(sb);

  // The npm image is in the cache, on the nodejs package image, listed with what it holds.
  auto images = vm::image::list_npm_images(default_paths().cache);
  auto ours = std::find_if(images.begin(), images.end(), [&](const vm::image::GuestImage& i) {
    return i.manifest.npm && i.manifest.npm->requested == request.npm;
  });
  REQUIRE(ours != images.end());
  CHECK(ours->manifest.npm->resolved == std::vector<std::string>{"lockroom-hello@1.0.0"});
  REQUIRE(ours->manifest.packages);
  CHECK(ours->manifest.packages->requested == std::vector<std::string>{"nodejs"});

  // A second create with the same kit takes the image and its template from memory.
  auto again = w.create(request);
  CHECK_THAT(w.sh(again, "lockroom-hello again"), Catch::Matches("hello from node [0-9]+, again\n"));
  w.destroy(again);
}

TEST_CASE("kit npm: the built-in claude kit's real claude-agent-acp answers ACP initialize in a guest", "[sandbox][kits][npm][agent]") {
  World& w = world();
  // The kit's secret is read from the host's environment; the guest only ever sees its sentinel.
  ::setenv("ANTHROPIC_API_KEY", "test-key-never-sent-anywhere", 1);
  auto plan = kits::resolve_kits(kits::KitCatalog({{kits::builtin_kits_dir(), "built-in"}}), {"claude"});
  INFO((plan ? "" : plan.error().message));
  REQUIRE(plan);
  core::CreateRequest request;
  request.network = core::NetworkRequest{};
  REQUIRE(core::apply_kit_plan(*plan, request));
  core::finish_network(request);

  std::optional<Result<core::CreateResult>> created;
  w.manager->create(request, nullptr, [&](Result<core::CreateResult> r) { created = std::move(r); });
  w.run_until([&] { return created.has_value(); }, 900s);
  INFO("create failed (this test needs the host's apt mirror, and npm's registry once): "
       << (created->ok() ? std::string() : created->error().message));
  REQUIRE(created->ok());
  std::string sb = (*created)->sandbox_id;

  CHECK(w.sh(sb, "echo $IS_SANDBOX $ANTHROPIC_API_KEY") == "1 LOCKROOM_SECRET_ANTHROPIC_API_KEY\n");
  // One request on the agent's stdin (kept open), its first line of stdout, then the agent is ended.
  std::string reply = w.sh(sb,
                           "mkfifo /tmp/acp-in /tmp/acp-out; claude-agent-acp < /tmp/acp-in > /tmp/acp-out 2>/dev/null & agent=$!; "
                           "exec 3> /tmp/acp-in; "
                           "echo '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1,\"clientCapabilities\":{}}}' >&3; "
                           "read -r line < /tmp/acp-out; echo \"$line\"; kill $agent");
  CHECK_THAT(reply, Catch::StartsWith("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":") &&
                        Catch::Contains("\"agentInfo\":{\"name\":\"@zed-industries/claude-agent-acp\""));
  w.destroy(sb);
}
