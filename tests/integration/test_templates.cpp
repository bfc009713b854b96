// Templates that outlive the process, with real guests: managers made one after another (as
// separate lockroom runs would be) share a template cache in a temp dir. The second does not boot;
// a damaged template is detected and rebuilt; a template that passes its checks but cannot be
// restored is dropped and a fresh one booted. And the second sandbox on a workspace restores
// from that workspace's template and receives only what changed on the host since.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "server/core/sandbox_manager.h"
#include "server/vm/image/sha256.h"
#include "tests/integration/guest_fixture.h"

using namespace lockroom;
using namespace lockroom::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

struct Events final : core::SandboxEvents {
  std::map<std::string, std::string> output;
  std::map<std::string, core::ProcessExit> exits;
  void state_changed(const std::string&, core::SandboxState, core::StopReason, const std::string&) override {}
  void process_output(const std::string& pid, core::OutputStream, const core::OutputChunk& chunk) override { output[pid] += chunk.data; }
  void process_exited(const std::string& pid, const core::ProcessExit& exit) override { exits[pid] = exit; }
};

// A template cache of its own (in a temp dir, removed after) that several managers use in turn.
struct TemplateCache {
  TempState base;
  vm::TemplateDirs dirs{base.dir / "templates", base.dir / "ram"};
};

// One "lockroom process": a loop and a manager over the shared template cache.
struct Run {
  uv_loop_t loop{};
  TempState state;
  Events events;
  std::unique_ptr<core::SandboxManager> manager;
  explicit Run(const TemplateCache& cache) {
    spdlog::set_level(spdlog::level::warn);
    uv_loop_init(&loop);
    core::ManagerConfig config;
    config.paths.cache = default_paths().cache;  // the guest image (built once per machine)
    config.paths.state = state.dir;
    config.accel = vm::choose_accel(vm::probe_host_virt(), vm::AccelPreference::kAuto).accel;
    config.agent = LOCKROOM_AGENT;
    config.template_dirs = cache.dirs;
    manager = std::make_unique<core::SandboxManager>(&loop, config, events);
  }
  ~Run() {
    bool down = false;
    manager->shutdown([&] { down = true; });
    run_until([&] { return down; });
    manager.reset();
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
  }
  template <typename Pred>
  void run_until(Pred done, std::chrono::milliseconds limit = 300s) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      uv_run(&loop, UV_RUN_ONCE);
    }
  }
  core::CreateResult create(core::CreateRequest request = {}) {
    std::optional<Result<core::CreateResult>> created;
    manager->create(request, nullptr, [&](Result<core::CreateResult> r) { created = std::move(r); });
    run_until([&] { return created.has_value(); });
    INFO((created->ok() ? std::string() : created->error().message));
    REQUIRE(created->ok());
    return **created;
  }
  std::string sh(const std::string& sandbox, const std::string& script) {
    std::optional<Result<std::string>> started;
    manager->start_process(sandbox, core::ProcessSpec{{"sh", "-c", script + " 2>&1"}, std::nullopt, {}, std::nullopt},
                           [&](Result<std::string> r) { started = std::move(r); });
    run_until([&] { return started.has_value(); });
    REQUIRE(started->ok());
    run_until([&] { return events.exits.count(**started) != 0; });
    return events.output[**started];
  }
  void idle() {
    bool idle = false;
    manager->templates().when_idle([&] { idle = true; });
    run_until([&] { return idle; });
  }
};

std::vector<vm::TemplateListing> base_templates(const TemplateCache& cache) {
  std::vector<vm::TemplateListing> out;
  for (auto& l : vm::list_stored(cache.dirs))
    if (l.stored.meta.kind == vm::TemplateKind::kBase) out.push_back(l);
  return out;
}

void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

}  // namespace

TEST_CASE("templates: a later run restores from the cached template instead of booting, damage is detected and rebuilt",
          "[integration][templates]") {
  TemplateCache cache;
  {
    Run first(cache);
    auto created = first.create();
    CHECK(created.template_source == core::TemplateSource::kBooted);
    CHECK(first.manager->templates().boots() == 1);
    CHECK(first.sh(created.sandbox_id, "echo first") == "first\n");
  }
  auto stored = base_templates(cache);
  REQUIRE(stored.size() == 1);
  const auto key = stored[0].stored.meta.key;
  CHECK((fs::status(cache.dirs.root / key).permissions() & fs::perms::all) == fs::perms::owner_all);
  CHECK((fs::status(stored[0].stored.meta.ram_file).permissions() & fs::perms::all) ==
        (fs::perms::owner_read | fs::perms::owner_write));

  std::int64_t cold_template_ms = 0;
  {
    Run second(cache);
    auto created = second.create();
    CHECK(created.template_source == core::TemplateSource::kCache);
    CHECK(second.manager->templates().boots() == 0);
    CHECK(second.sh(created.sandbox_id, "echo second") == "second\n");
    // Two more in the same run come from memory.
    auto again = second.create();
    CHECK(again.template_source == core::TemplateSource::kMemory);
    CHECK(again.timings.template_ms == 0);
    cold_template_ms = created.timings.template_ms;
  }
  INFO("template_ms of the run that found the template: " << cold_template_ms);
  CHECK(cold_template_ms < 3000);  // a boot under TCG takes 6-8 s

  // A truncated device state is detected, the template removed and booted again.
  {
    fs::resize_file(cache.dirs.root / key / "device.state", 100);
    Run third(cache);
    auto created = third.create();
    CHECK(created.template_source == core::TemplateSource::kBooted);
    CHECK(third.manager->templates().boots() == 1);
    CHECK(third.sh(created.sandbox_id, "echo rebuilt") == "rebuilt\n");
    auto rebuilt = base_templates(cache);
    REQUIRE(rebuilt.size() == 1);
    CHECK(rebuilt[0].stored.meta.ram_file != stored[0].stored.meta.ram_file);
    CHECK_FALSE(fs::exists(stored[0].stored.meta.ram_file));
  }
  // A template that passes its checks but cannot be restored is dropped, and a fresh one booted.
  stored = base_templates(cache);
  REQUIRE(stored.size() == 1);
  {
    // Garbage in place of the device state, with meta.json made to agree: only the restore can tell.
    std::string garbage(4096, 'x');
    write_file(cache.dirs.root / key / "device.state", garbage);
    auto meta_path = cache.dirs.root / key / "meta.json";
    std::ifstream in(meta_path);
    auto meta = nlohmann::json::parse(in);
    meta["stateBytes"] = garbage.size();
    meta["stateSha256"] = vm::image::sha256_hex(garbage);
    std::ofstream(meta_path) << meta.dump();
    Run fourth(cache);
    auto created = fourth.create();
    CHECK(created.template_source == core::TemplateSource::kBooted);
    CHECK(fourth.manager->templates().boots() == 1);
    CHECK(fourth.sh(created.sandbox_id, "echo recovered") == "recovered\n");
    auto rebuilt = base_templates(cache);
    REQUIRE(rebuilt.size() == 1);
    CHECK(rebuilt[0].stored.meta.ram_file != stored[0].stored.meta.ram_file);
  }
}

TEST_CASE("templates: the second sandbox on a workspace receives only what changed since its template",
          "[integration][templates][workspace]") {
  TemplateCache cache;
  TempState host;
  fs::path repo = host.dir / "project";
  for (int i = 0; i < 40; ++i) write_file(repo / "src" / ("file" + std::to_string(i) + ".txt"), "content of file " + std::to_string(i) + "\n");
  write_file(repo / "README.md", "# project\n");
  write_file(repo / ".env", "TOKEN=never-in-a-guest\n");
  core::CreateRequest request;
  request.workspace = core::WorkspaceRequest{repo.string(), {}, {}};

  Run run(cache);
  auto first = run.create(request);
  REQUIRE(first.workspace);
  const auto first_objects = first.workspace->transfer.objects;
  CHECK(first_objects >= 43);  // commit, two trees, 41 blobs
  run.idle();  // the workspace template is built in the background
  CHECK(run.manager->templates().workspace_builds() == 1);
  std::vector<vm::TemplateListing> ws_templates;
  for (auto& l : vm::list_stored(cache.dirs))
    if (l.stored.meta.kind == vm::TemplateKind::kWorkspace) ws_templates.push_back(l);
  REQUIRE(ws_templates.size() == 1);
  CHECK((fs::status(ws_templates[0].stored.meta.ram_file).permissions() & fs::perms::all) ==
        (fs::perms::owner_read | fs::perms::owner_write));

  // The host edits one file and adds one.
  write_file(repo / "src" / "file7.txt", "edited on the host\n");
  write_file(repo / "added.txt", "new\n");
  auto second = run.create(request);
  REQUIRE(second.workspace);
  CHECK(second.template_source == core::TemplateSource::kWorkspace);
  const auto& sent = second.workspace->transfer;
  INFO("first import: " << first_objects << " objects; second: " << sent.objects << " objects, " << sent.pack_bytes << " bytes");
  // The commit, the root tree, src/, and the two blobs.
  CHECK(sent.objects == 5);
  CHECK(sent.objects < first_objects);
  CHECK(run.sh(second.sandbox_id, "cat /workspace/src/file7.txt /workspace/added.txt /workspace/src/file8.txt") ==
        "edited on the host\nnew\ncontent of file 8\n");
  CHECK(run.sh(second.sandbox_id, "cd /workspace && git status --porcelain && echo clean") == "clean\n");
  CHECK(run.sh(second.sandbox_id, "test -e /workspace/.env && echo leaked || echo withheld") == "withheld\n");
}
