// ManagerConfig::upstream_ca_files (what `serve --upstream-ca` and `run --upstream-ca` fill)
// reach the egress proxy of every sandbox the manager makes with networking: a manager whose
// CA file is not PEM cannot start a networked sandbox, and the error names that file. (The
// HTTPS tests, test_sandbox_network_https.cpp, prove that CAs in the request are trusted; the
// CLI's side is tests/unit/cli/test_upstream_ca_option.cpp.)
//
// A manager of its own (the world's has no upstream CAs), over the same template cache, so the
// guest is restored, not booted, when the world's template is already there.
#include <catch2/catch.hpp>

#include <optional>

#include "server/common/paths.h"
#include "tests/integration/sandbox_world.h"
#include "tests/support/temp_dir.h"

using namespace lockroom;
using namespace lockroom::testing;

namespace {

// A loop and a SandboxManager with `upstream_ca_files`, shut down and closed at the end.
struct ManagerWithCas {
  uv_loop_t loop{};
  TempState state;
  Recorder events;
  core::ProcessWatch watch{events};
  std::unique_ptr<core::SandboxManager> manager;
  explicit ManagerWithCas(std::vector<std::filesystem::path> upstream_ca_files) {
    uv_loop_init(&loop);
    core::ManagerConfig config = test_manager_config(state.dir);
    config.upstream_ca_files = std::move(upstream_ca_files);
    manager = std::make_unique<core::SandboxManager>(&loop, config, watch);
  }
  ~ManagerWithCas() {
    bool down = false;
    manager->shutdown([&] { down = true; });
    run_until([&] { return down; });
    manager.reset();
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK(uv_loop_close(&loop) == 0);
  }
  template <typename Pred>
  void run_until(Pred done, std::chrono::milliseconds limit = 180s) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      uv_run(&loop, UV_RUN_ONCE);
    }
  }
  Result<core::CreateResult> create(core::CreateRequest request) {
    std::optional<Result<core::CreateResult>> created;
    manager->create(std::move(request), nullptr, [&](Result<core::CreateResult> r) { created = std::move(r); });
    run_until([&] { return created.has_value(); });
    return std::move(*created);
  }
};

}  // namespace

TEST_CASE("the manager's upstream CAs reach each networked sandbox's proxy", "[sandbox][network][upstream-ca]") {
  TempDir dir{"lockroom-upstream-ca"};
  std::filesystem::path not_a_ca = dir.write("not-a-ca.pem", "this is not a PEM certificate\n");
  ManagerWithCas m({not_a_ca});

  core::CreateRequest networked;
  networked.network = core::NetworkRequest{};
  auto refused = m.create(networked);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message, Catch::Contains("cannot load CA certificates from '" + not_a_ca.string() + "'"));
}
