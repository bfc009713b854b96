// Kits with Debian packages in a real guest: `packages: [jq]` (jq has library dependencies,
// libjq1 and libonig5) resolved and downloaded with this host's apt, laid over the default image
// (vm/image/package_image.h), booted as its own template, and run. Needs the apt mirror the host
// is configured with (as the kernel fetch does): when apt cannot reach it the create fails with
// apt's message, and so does this test — it never skips.
#include <catch2/catch.hpp>

#include "server/core/kit_request.h"
#include "server/vm/image/package_image.h"
#include "tests/integration/sandbox_world.h"

using namespace lockroom;
using namespace lockroom::testing;

namespace {

core::CreateRequest request_for_kit(const std::string& yaml) {
  auto kit = kits::parse_kit(yaml, "kit.yaml");
  INFO((kit ? "" : kit.error().message));
  REQUIRE(kit);
  auto plan = kits::merge_kits({*kit});
  REQUIRE(plan);
  REQUIRE(core::check_kit_plan_supported(*plan));
  core::CreateRequest request;
  REQUIRE(core::apply_kit_plan(*plan, request));
  core::finish_network(request);
  return request;
}

}  // namespace

TEST_CASE("kit packages: jq and its libraries from apt run in a real guest booted from the package image", "[sandbox][kits][packages]") {
  World& w = world();
  core::CreateRequest request = request_for_kit("name: jq-kit\npackages: [jq]\n");
  REQUIRE(request.packages == std::vector<std::string>{"jq"});

  std::vector<std::string> progress;
  std::optional<Result<core::CreateResult>> created;
  w.manager->create(request, [&](const std::string& line, int) { progress.push_back(line); },
                    [&](Result<core::CreateResult> r) { created = std::move(r); });
  w.run_until([&] { return created.has_value(); }, 600s);
  INFO("create failed (this test needs the host's apt mirror): " << (created->ok() ? std::string() : created->error().message));
  REQUIRE(created->ok());
  std::string sb = (*created)->sandbox_id;

  // jq parses, through libjq1 and libonig5 (a regex), which only the layer carries.
  CHECK(w.sh(sb, "echo '{\"a\":[1,2],\"b\":\"x-y\"}' | jq -c '[.a[] * 10, (.b | test(\"^x-\"))]'") == "[10,20,true]\n");
  CHECK(w.sh(sb, "ls /usr/lib/x86_64-linux-gnu/ | grep -c -E '^lib(jq|onig)\\.so'") != "0\n");
  // The base stays the base: sh is busybox's, and documentation was left out (the copyright kept).
  CHECK(w.sh(sb, "readlink /bin/sh; ls /usr/share/doc/jq") == "busybox\ncopyright\n");
  w.destroy(sb);

  // The package image is in the cache, listed with what it was made of.
  auto images = vm::image::list_package_images(default_paths().cache);
  auto jq_image = std::find_if(images.begin(), images.end(), [](const vm::image::GuestImage& i) {
    return i.manifest.packages && i.manifest.packages->requested == std::vector<std::string>{"jq"};
  });
  REQUIRE(jq_image != images.end());
  const auto& resolved = jq_image->manifest.packages->resolved;
  CHECK(std::any_of(resolved.begin(), resolved.end(), [](const std::string& r) { return r.rfind("libonig5=", 0) == 0; }));
  CHECK(jq_image->manifest.packages->layer_bytes > 0);

  // A second create with the same set takes the package image and its template from memory.
  auto again = w.create(request);
  CHECK(w.sh(again, "echo '[3]' | jq '.[0] + 1'") == "4\n");
  w.destroy(again);
}

TEST_CASE("kit packages: a package apt does not know fails the create, naming it", "[sandbox][kits][packages]") {
  World& w = world();
  core::CreateRequest request = request_for_kit("name: typo\npackages: [jq, lockroom-no-such-package]\n");
  std::optional<Result<core::CreateResult>> created;
  w.manager->create(request, nullptr, [&](Result<core::CreateResult> r) { created = std::move(r); });
  w.run_until([&] { return created.has_value(); });
  REQUIRE_FALSE(created->ok());
  CHECK_THAT(created->error().message, Catch::Contains("\"lockroom-no-such-package\" does not exist"));
  CHECK(created->error().code == ErrorCode::kNotFound);  // the editor sees kind: notFound
}
