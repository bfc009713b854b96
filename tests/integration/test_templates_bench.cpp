// Hidden benchmark ([.bench]; run `lockroom-template-tests "[.bench]"`): create with a workspace
// of a few thousand files, the first sandbox against later ones restored from the workspace's
// template (3 files changed on the host before each), and against later ones without workspace
// templates (the base template from memory and the whole workspace sent), in one run.
// Source tree: $LOCKROOM_BENCH_SOURCE, else /usr/lib/python3/dist-packages, else /usr/include.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <vector>

#include <spdlog/spdlog.h>

#include "server/core/sandbox_manager.h"
#include "tests/integration/guest_fixture.h"

using namespace lockroom;
using namespace lockroom::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

struct QuietEvents final : core::SandboxEvents {
  void state_changed(const std::string&, core::SandboxState, core::StopReason, const std::string&) override {}
  void process_output(const std::string&, core::OutputStream, const core::OutputChunk&) override {}
  void process_exited(const std::string&, const core::ProcessExit&) override {}
};

struct BenchRun {
  uv_loop_t loop{};
  TempState state;
  QuietEvents events;
  std::unique_ptr<core::SandboxManager> manager;
  BenchRun(const vm::TemplateDirs& dirs, bool persistent) {
    uv_loop_init(&loop);
    core::ManagerConfig config;
    config.paths.cache = default_paths().cache;
    config.paths.state = state.dir;
    config.accel = vm::choose_accel(vm::probe_host_virt(), vm::AccelPreference::kAuto).accel;
    config.agent = LOCKROOM_AGENT;
    config.template_dirs = dirs;
    config.persistent_templates = persistent;
    manager = std::make_unique<core::SandboxManager>(&loop, config, events);
  }
  ~BenchRun() {
    bool down = false;
    manager->shutdown([&] { down = true; });
    while (!down) uv_run(&loop, UV_RUN_ONCE);
    manager.reset();
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
  }
  core::CreateResult create(const core::CreateRequest& request) {
    std::optional<Result<core::CreateResult>> created;
    manager->create(request, nullptr, [&](Result<core::CreateResult> r) { created = std::move(r); });
    while (!created) uv_run(&loop, UV_RUN_ONCE);
    INFO((created->ok() ? std::string() : created->error().message));
    REQUIRE(created->ok());
    return **created;
  }
  void destroy(const std::string& id) {
    bool done = false;
    manager->destroy(id, [&](Result<void>) { done = true; });
    while (!done) uv_run(&loop, UV_RUN_ONCE);
  }
  std::int64_t idle() {
    auto started = std::chrono::steady_clock::now();
    bool idle = false;
    manager->templates().when_idle([&] { idle = true; });
    while (!idle) uv_run(&loop, UV_RUN_ONCE);
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
  }
};

fs::path bench_source() {
  if (const char* s = std::getenv("LOCKROOM_BENCH_SOURCE")) return s;
  if (fs::is_directory("/usr/lib/python3/dist-packages")) return "/usr/lib/python3/dist-packages";
  return "/usr/include";
}

void append_line(const fs::path& p, const std::string& line) { std::ofstream(p, std::ios::app) << line << "\n"; }

std::string row(const char* what, const core::CreateResult& r) {
  char buf[256];
  const auto& t = r.workspace->transfer;
  std::snprintf(buf, sizeof buf, "| %s | %lld | %lld | %lld | %lld | %llu | %.1f |", what, static_cast<long long>(r.timings.total_ms),
                static_cast<long long>(r.timings.restore_ms), static_cast<long long>(r.timings.snapshot_ms),
                static_cast<long long>(r.timings.import_ms), static_cast<unsigned long long>(t.objects),
                static_cast<double>(t.pack_bytes) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

TEST_CASE("templates bench: create with a workspace, first against second", "[.bench][templates]") {
  spdlog::set_level(spdlog::level::warn);
  TempState tmp;
  fs::path repo = tmp.dir / "tree";
  fs::copy(bench_source(), repo, fs::copy_options::recursive | fs::copy_options::skip_symlinks);
  REQUIRE(std::system(("cd '" + repo.string() + "' && git init -q -b main && git -c user.name=b -c user.email=b@b add -A && "
                       "git -c user.name=b -c user.email=b@b commit -q -m tree").c_str()) == 0);
  std::vector<fs::path> files;
  for (auto& e : fs::recursive_directory_iterator(repo))
    if (e.is_regular_file() && e.path().string().find("/.git/") == std::string::npos) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::cout << "source " << bench_source() << ": " << files.size() << " files\n";
  core::CreateRequest request;
  request.workspace = core::WorkspaceRequest{repo.string(), {}, {}};
  vm::TemplateDirs dirs{tmp.dir / "templates", tmp.dir / "ram"};
  std::vector<std::string> rows;
  std::size_t edit = 0;
  auto edit_three = [&] {
    for (int i = 0; i < 3; ++i) {
      ++edit;
      append_line(files[(edit * 997) % files.size()], "# edited " + std::to_string(edit));
    }
  };
  {
    BenchRun run(dirs, true);
    auto first = run.create(request);  // boots the base template too
    rows.push_back(row("first (base template booted, whole workspace)", first));
    run.destroy(first.sandbox_id);
    std::int64_t build_ms = run.idle();
    std::cout << "workspace template built in the background, " << build_ms << " ms after the first create returned\n";
    for (int i = 0; i < 3; ++i) {
      edit_three();
      auto next = run.create(request);
      CHECK(next.template_source == core::TemplateSource::kWorkspace);
      rows.push_back(row("later, from the workspace template (3 files changed)", next));
      run.destroy(next.sandbox_id);
    }
    for (const auto& l : vm::list_stored(dirs))
      std::cout << (l.stored.meta.kind == vm::TemplateKind::kBase ? "base" : "workspace") << " template: "
                << l.disk_bytes / (1024 * 1024) << " MiB on disk/in RAM\n";
  }
  {
    BenchRun run(dirs, false);  // no workspace templates: what every create did before
    run.destroy(run.create({}).sandbox_id);  // the base template, kept in memory
    for (int i = 0; i < 3; ++i) {
      edit_three();
      auto next = run.create(request);
      rows.push_back(row("later, without workspace templates (3 files changed)", next));
      run.destroy(next.sandbox_id);
    }
  }
  std::cout << "| create | total ms | restore ms | snapshot ms | import ms | objects sent | MiB sent |\n|---|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& r : rows) std::cout << r << "\n";
}
