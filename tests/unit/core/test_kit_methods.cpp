// kit/list and kit/validate (server/api/kit_methods.*) through a real Dispatcher and a real loop
// (the kit files are read on its thread pool), on kits written to temporary folders.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>

#include "server/api/kit_methods.h"
#include "tests/unit/core/test_control_util.h"
#include "tests/unit/test_dispatcher_harness.h"

using namespace lockroom;
using namespace lockroom::testing::dispatcher;
using lockroom::testing::TempDir;

namespace {

void write(const std::filesystem::path& file, const std::string& text) {
  std::filesystem::create_directories(file.parent_path());
  std::ofstream(file) << text;
}

struct KitWorld {
  uv_loop_t loop{};
  Harness h;
  TempDir workspace{"lockroom-kit-ws"};
  TempDir kit_path{"lockroom-kit-path"};
  std::string old_kit_path;

  KitWorld() {
    uv_loop_init(&loop);
    api::bind_kit_methods(h.d(), &loop);
    if (const char* old = std::getenv("LOCKROOM_KIT_PATH")) old_kit_path = old;
    setenv("LOCKROOM_KIT_PATH", kit_path.path().c_str(), 1);
    auto kits = workspace.path() / ".lockroom" / "kits";
    write(kits / "base.yaml", "name: base\ndescription: the base\nenv: {LEVEL: base, KEEP: yes}\n");
    write(kits / "app" / "kit.yaml", "name: app\ndescription: the app\nextends: [base]\nenv: {LEVEL: app}\n");
    write(kits / "broken.yaml", "name: broken\nenv:\n  PATH: [not, a, string]\n");
    write(kits / "loop-a.yaml", "name: loop-a\nextends: [loop-b]\n");
    write(kits / "loop-b.yaml", "name: loop-b\nextends: [loop-a]\n");
    // The same name earlier in the search path hides the workspace's.
    write(kit_path.path() / "base.yaml", "name: base\ndescription: from LOCKROOM_KIT_PATH\nenv: {LEVEL: path}\n");
  }
  ~KitWorld() {
    if (old_kit_path.empty()) unsetenv("LOCKROOM_KIT_PATH");
    else setenv("LOCKROOM_KIT_PATH", old_kit_path.c_str(), 1);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
  }
  // Sends one request and turns the loop until its answer.
  json ask(const std::string& method, const json& params) {
    h.in(request(1, method, params));
    while (h.sent.empty()) uv_run(&loop, UV_RUN_ONCE);
    return h.take_one();
  }
};

const json* find_kit(const json& list, const std::string& name) {
  for (const auto& k : list.at("kits"))
    if (k.at("name") == name) return &k;
  return nullptr;
}

}  // namespace

TEST_CASE("kit/list shows every visible kit with its origin, and a broken one with why", "[kits][api]") {
  KitWorld w;
  json reply = w.ask("kit/list", {{"workspace", w.workspace.path().string()}});
  INFO(reply.dump());
  const json& result = reply.at("result");
  const json* base = find_kit(result, "base");
  REQUIRE(base);
  CHECK(base->at("origin") == "LOCKROOM_KIT_PATH");
  CHECK(base->at("description") == "from LOCKROOM_KIT_PATH");
  const json* app = find_kit(result, "app");
  REQUIRE(app);
  CHECK(app->at("origin") == "workspace");
  CHECK(app->at("extends") == json::array({"base"}));
  const json* broken = find_kit(result, "broken");
  REQUIRE(broken);
  CHECK_FALSE(broken->contains("description"));
  CHECK(has(broken->at("error").get<std::string>(), "broken.yaml:3"));
  const json* offline = find_kit(result, "offline");  // shipped with lockroom
  REQUIRE(offline);
  CHECK(offline->at("origin") == "built-in");
  REQUIRE(result.at("searched").size() >= 3);
  CHECK(result.at("searched")[0].at("origin") == "LOCKROOM_KIT_PATH");
  CHECK(result.at("searched")[1].at("dir") == (w.workspace.path() / ".lockroom" / "kits").string());
}

TEST_CASE("kit/validate answers the merged plan sandbox/create would use", "[kits][api]") {
  KitWorld w;
  json reply = w.ask("kit/validate", {{"kits", {"app"}}, {"workspace", w.workspace.path().string()}});
  INFO(reply.dump());
  const json& plan = reply.at("result").at("plan");
  CHECK(plan.at("kits") == json::array({"base", "app"}));
  CHECK(plan.at("env").at("LEVEL") == "app");     // the later kit wins
  CHECK_FALSE(plan.at("env").contains("KEEP"));   // base came from LOCKROOM_KIT_PATH, not the workspace
}

TEST_CASE("kit/validate refuses what sandbox/create would refuse, saying why", "[kits][api]") {
  KitWorld w;
  std::string ws = w.workspace.path().string();
  json missing = w.ask("kit/validate", {{"kits", {"nope"}}, {"workspace", ws}});
  INFO(missing.dump());
  CHECK(error_code(missing) == -32803);
  CHECK(has(error_message(missing), "nope"));

  json broken = w.ask("kit/validate", {{"kits", {"broken"}}, {"workspace", ws}});
  INFO(broken.dump());
  CHECK(error_code(broken) == -32602);
  CHECK(has(error_message(broken), "broken.yaml:3"));

  json cycle = w.ask("kit/validate", {{"kits", {"loop-a"}}, {"workspace", ws}});
  INFO(cycle.dump());
  CHECK(has(error_message(cycle), "loop-a"));
  CHECK(has(error_message(cycle), "loop-b"));

  json empty = w.ask("kit/validate", {{"kits", json::array()}});
  CHECK(error_code(empty) == -32602);
  CHECK(has(error_message(empty), "\"kits\""));
  json none = w.ask("kit/validate", json::object());
  CHECK(error_code(none) == -32602);
  json too_many = w.ask("kit/validate", {{"kits", std::vector<std::string>(33, "app")}});
  CHECK(error_code(too_many) == -32602);
  CHECK(has(error_message(too_many), "33"));
}
