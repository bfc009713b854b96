// Kits in a real guest: a plan's env, files, setup commands and services (core/kit_request.*,
// core/kit_setup.*), and a failing or hanging setup command reported with what it said.
#include <catch2/catch.hpp>

#include "server/core/kit_request.h"
#include "server/core/kit_setup.h"
#include "tests/integration/sandbox_world.h"
#include "tests/support/kit_plan_of.h"

using namespace lockroom;
using namespace lockroom::testing;

namespace {


struct SetupRun {
  std::optional<Result<core::KitSetupReport>> report;
  std::vector<std::string> steps;
  std::string output;
};

SetupRun run_setup(World& w, const std::string& sandbox, kits::KitPlan plan) {
  SetupRun run;
  core::KitSetupHooks hooks;
  hooks.step = [&run](const std::string& m) { run.steps.push_back(m); };
  hooks.output = [&run](std::string_view bytes) { run.output.append(bytes); };
  core::KitSetup::run(&w.loop, *w.manager, w.watch, sandbox, std::move(plan), false, std::move(hooks),
                      [&run](Result<core::KitSetupReport> r) { run.report = std::move(r); });
  w.run_until([&] { return run.report.has_value(); });
  return run;
}

}  // namespace

TEST_CASE("kits: env, files, setup and services reach a real guest, and a failing or hanging setup is named", "[sandbox][kits]") {
  World& w = world();
  kits::KitPlan plan = plan_of({R"(name: base
env: {KIT_GREETING: from base, KIT_OTHER: kept}
files: [{path: /etc/demo/motd, content: "base file\n"}]
)",
                                R"(name: demo
extends: base
env: {KIT_GREETING: hello from the kit}
files: [{path: /etc/demo/motd, content: "kit file\n", mode: 0604}]
setup:
  - echo setup ran > /tmp/setup-marker; echo "setup says hi"
services: [{name: sleeper, run: sleep 1000, cwd: /}]
)"});
  core::CreateRequest request;
  request.env = {{"KIT_OTHER", "from the request"}};
  REQUIRE(core::apply_kit_plan(plan, request));
  core::finish_network(request);
  std::string sb = w.create(request);

  SetupRun run = run_setup(w, sb, plan);
  INFO((run.report->ok() ? "" : run.report->error().message));
  REQUIRE(run.report->ok());
  CHECK(run.output == "setup says hi\n");
  REQUIRE(run.steps.size() == 2);
  CHECK(run.steps[0].find("kit demo: echo setup ran") == 0);
  CHECK(run.steps[1] == "kit demo: starting service sleeper");
  REQUIRE((*run.report)->services.size() == 1);
  CHECK((*run.report)->services[0].name == "sleeper");
  // The setup's output was the kit runner's, not the editor's; the service is an ordinary process.
  for (const auto& [pid, text] : w.events.output) CHECK(text.find("setup says hi") == std::string::npos);
  CHECK(w.events.exits.count((*run.report)->services[0].process_id) == 0);

  CHECK(w.sh(sb, "cat /etc/demo/motd; stat -c %a /etc/demo/motd; echo $KIT_GREETING; echo $KIT_OTHER; cat /tmp/setup-marker; "
                 "pidof sleep >/dev/null && echo service running") ==
        "kit file\n604\nhello from the kit\nfrom the request\nsetup ran\nservice running\n");

  // A setup command that fails names itself, its kit, its status and its last output.
  SetupRun failed = run_setup(w, sb, plan_of({"name: bad\nsetup: [\"echo boom >&2; exit 3\"]\n"}));
  REQUIRE_FALSE(failed.report->ok());
  CHECK(failed.report->error().message ==
        "kit setup failed: `echo boom >&2; exit 3` (kit bad) exited with code 3; its last output:\nboom\n");

  // One that outlives its timeout is killed and says so.
  SetupRun hung = run_setup(w, sb, plan_of({"name: slow\nsetup: [{run: sleep 60, timeoutSeconds: 1}]\n"}));
  REQUIRE_FALSE(hung.report->ok());
  CHECK(hung.report->error().message == "kit setup failed: `sleep 60` (kit slow) did not finish within 1 s and was killed (no output)");
  w.destroy(sb);
}
