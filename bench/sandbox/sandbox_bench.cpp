// bench/sandbox: what a user of sandboxes feels, measured through the SandboxManager with the
// real lockroom-agent, against peers on the host in the same run.
//
//   lockroom-bench-sandbox [--runs N] [--cold-runs N] [--idle N] [--stdout-mib N]
//
// 0. cold start: a manager with no template and no template cache boots one on its first create
//    (cold boot of the image, snapshot, restore) -> first output of `echo`; a fresh manager each
//    run. Then the same with the template cache on: a new process (a new `lockroom run`) finds
//    the template an earlier one stored and restores from it.
// 1. create -> first output: sandbox create (restore from the template) immediately followed by
//    process start of `echo`, timed to the first output byte. N runs, one fresh sandbox each.
// 2. exec round trip: start of `true` -> its exit, in one live sandbox, N runs; peers on the
//    host: fork/exec of `true` and `bwrap --ro-bind / / true` (when bwrap is installed).
// 3. stdout throughput: a guest process writes --stdout-mib MiB to stdout; bytes/time at the
//    host's event sink (MB/s); peer: the same command on the host through a pipe.
// 4. memory: --idle sandboxes alive and idle, each QEMU's PSS/RSS from smaps_rollup.
// Prints Markdown tables (medians, min, max, ratios) for docs/benchmarks/sandbox.md.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>
#include <uv.h>

#include "bench/common/bench_stats.h"
#include "server/common/paths.h"
#include "server/core/sandbox_manager.h"
#include "server/vm/accel.h"

using namespace lockroom;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
extern char** environ;

namespace {

double ms(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

// Timestamps of what the benchmark waits for.
struct Sink final : core::SandboxEvents {
  std::map<std::string, Clock::time_point> first_output;
  std::map<std::string, std::size_t> bytes;
  std::map<std::string, Clock::time_point> exited;
  void state_changed(const std::string&, core::SandboxState, core::StopReason, const std::string&) override {}
  void process_output(const std::string&, core::OutputStream, const core::OutputChunk&) override {}
  void process_bytes(const std::string& pid, core::OutputStream, std::string_view b) override {
    first_output.try_emplace(pid, Clock::now());
    bytes[pid] += b.size();
  }
  void process_exited(const std::string& pid, const core::ProcessExit&) override { exited[pid] = Clock::now(); }
};

struct Bench {
  uv_loop_t loop{};
  Sink sink;
  std::unique_ptr<core::SandboxManager> manager;
  std::string state_dir;

  Bench() {
    uv_loop_init(&loop);
    // mkdtemp fills in the XXXXXX; $TMPDIR is honoured.
    std::string tmpl = (std::filesystem::temp_directory_path() / "lockroom-bench-XXXXXX").string();
    state_dir = mkdtemp(tmpl.data());
    fresh_manager();
  }
  ~Bench() {
    drop_manager();
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    std::error_code ec;
    std::filesystem::remove_all(state_dir, ec);
  }
  // A new manager has no template in memory. Without the template cache its first create boots
  // one (the cold path); with it, the first create restores what an earlier manager stored.
  void fresh_manager(bool template_cache = true) {
    drop_manager();
    sink = Sink{};  // process ids start again at p-1
    core::ManagerConfig config;
    config.paths.cache = default_paths().cache;
    config.persistent_templates = template_cache;
    config.paths.state = state_dir;
    config.accel = vm::choose_accel(vm::probe_host_virt(), vm::AccelPreference::kAuto).accel;
    config.agent = LOCKROOM_AGENT;
    manager = std::make_unique<core::SandboxManager>(&loop, config, sink);
  }
  void drop_manager() {
    if (!manager) return;
    bool done = false;
    manager->shutdown([&] { done = true; });
    while (!done) uv_run(&loop, UV_RUN_ONCE);
    manager.reset();
  }
  // create + start `echo`, timed from the create call to the first output byte. When `expect`
  // is given, the create must have got its template from there (the run measures what it says).
  double create_to_first_output(double* create_ms = nullptr, std::optional<core::TemplateSource> expect = std::nullopt) {
    auto start = Clock::now();
    core::CreateResult created = create_result();
    if (expect && created.template_source != *expect)
      throw std::runtime_error(std::string("expected a template from ") + core::template_source_name(*expect) + ", got one from " +
                               core::template_source_name(created.template_source));
    std::string sb = created.sandbox_id;
    if (create_ms) *create_ms = ms(start, Clock::now());
    std::string pid = this->start(sb, {"echo", "hello"});
    run_until([&] { return sink.first_output.count(pid) != 0; });
    double took = ms(start, sink.first_output[pid]);
    wait_exit(pid);
    destroy(sb);
    return took;
  }
  template <typename Pred>
  void run_until(Pred done) {
    auto deadline = Clock::now() + 300s;
    while (!done()) {
      if (Clock::now() > deadline) throw std::runtime_error("benchmark step timed out");
      uv_run(&loop, UV_RUN_ONCE);
    }
  }
  template <typename T>
  T take(std::optional<Result<T>>& r) {
    run_until([&] { return r.has_value(); });
    if (!r->ok()) throw std::runtime_error(r->error().message);
    return std::move(**r);
  }
  core::CreateResult create_result() {
    std::optional<Result<core::CreateResult>> r;
    manager->create({}, nullptr, [&](Result<core::CreateResult> v) { r = std::move(v); });
    return take(r);
  }
  std::string create() { return create_result().sandbox_id; }
  std::string start(const std::string& sb, std::vector<std::string> argv) {
    std::optional<Result<std::string>> r;
    manager->start_process(sb, core::ProcessSpec{std::move(argv), std::nullopt, {}, std::nullopt},
                           [&](Result<std::string> v) { r = std::move(v); });
    return take(r);
  }
  void destroy(const std::string& sb) {
    bool done = false;
    manager->destroy(sb, [&](Result<void>) { done = true; });
    run_until([&] { return done; });
  }
  void wait_exit(const std::string& pid) {
    run_until([&] { return sink.exited.count(pid) != 0; });
  }
};

// fork/exec of argv on the host, waited for: the peer for the in-guest exec round trip.
double host_exec_ms(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  auto t0 = Clock::now();
  pid_t pid = 0;
  if (posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ) != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return ms(t0, Clock::now());
}

bool have_program(const char* name) {
  std::string cmd = std::string("command -v ") + name + " >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lockroom sandbox benchmark"};
  int runs = 20, cold_runs = 10, idle = 5, stdout_mib = 64;
  app.add_option("--cold-runs", cold_runs, "cold starts (a fresh template boot each)")->check(CLI::Range(1, 100));
  app.add_option("--runs", runs, "runs per measurement")->check(CLI::Range(3, 1000));
  app.add_option("--idle", idle, "idle sandboxes for the memory measurement")->check(CLI::Range(1, 64));
  app.add_option("--stdout-mib", stdout_mib, "MiB written to stdout by the throughput test")->check(CLI::Range(1, 4096));
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::warn);

  Bench b;
  std::cerr << "warming up: the guest image (built once, then cached)...\n";
  b.create_to_first_output();

  // 0. cold: a manager without a template (and without the cache) boots one for its first
  //    create (boot, snapshot, restore); without templates every sandbox would pay this.
  std::vector<double> cold, from_cache;
  for (int i = 0; i < cold_runs; ++i) {
    std::cerr << "cold start " << i + 1 << "/" << cold_runs << "\r";
    b.fresh_manager(false);
    cold.push_back(b.create_to_first_output(nullptr, core::TemplateSource::kBooted));
  }
  std::cerr << "\n";
  // 0b. a new process whose template an earlier one stored (the warm-up's manager did).
  for (int i = 0; i < cold_runs; ++i) {
    std::cerr << "template from the cache " << i + 1 << "/" << cold_runs << "\r";
    b.fresh_manager(true);
    from_cache.push_back(b.create_to_first_output(nullptr, core::TemplateSource::kCache));
  }
  std::cerr << "\n";

  // 1. create -> first output, restored from the template.
  std::vector<double> first_output, create_only;
  for (int i = 0; i < runs; ++i) {
    double c = 0;
    first_output.push_back(b.create_to_first_output(&c));
    create_only.push_back(c);
  }

  // 2. exec round trip of `true`.
  std::string sb = b.create();
  std::vector<double> guest_true, host_true, bwrap_true;
  for (int i = 0; i < runs; ++i) {
    auto start = Clock::now();
    std::string pid = b.start(sb, {"true"});
    b.wait_exit(pid);
    guest_true.push_back(ms(start, b.sink.exited[pid]));
    host_true.push_back(host_exec_ms({"true"}));
  }
  bool bwrap = have_program("bwrap") && host_exec_ms({"bwrap", "--ro-bind", "/", "/", "true"}) >= 0;
  if (bwrap)
    for (int i = 0; i < runs; ++i) bwrap_true.push_back(host_exec_ms({"bwrap", "--ro-bind", "/", "/", "true"}));

  // 3. stdout throughput.
  std::string count = std::to_string(stdout_mib * 16);
  std::vector<std::string> writer = {"dd", "if=/dev/zero", "bs=64k", "count=" + count};
  auto ts = Clock::now();
  std::string tp = b.start(sb, writer);
  b.wait_exit(tp);
  double guest_mbps = b.sink.bytes[tp] / 1e6 / (ms(ts, b.sink.exited[tp]) / 1000);
  std::string host_cmd = "dd if=/dev/zero bs=64k count=" + count + " 2>/dev/null | cat >/dev/null";
  auto th = Clock::now();
  int rc = std::system(host_cmd.c_str());
  double host_mbps = rc == 0 ? stdout_mib * 1.048576 / (ms(th, Clock::now()) / 1000) : -1;
  b.destroy(sb);

  // 4. memory per idle sandbox.
  std::vector<std::string> idle_ids;
  for (int i = 0; i < idle; ++i) idle_ids.push_back(b.create());
  auto settle = Clock::now() + 2s;
  b.run_until([&] { return Clock::now() > settle; });
  std::vector<double> pss, rss;
  for (const auto& s : b.manager->list()) {
    if (s.qemu_pid <= 0) continue;
    pss.push_back(bench::rollup_kb(s.qemu_pid, "Pss") / 1024.0);
    rss.push_back(bench::rollup_kb(s.qemu_pid, "Rss") / 1024.0);
  }
  for (const auto& id : idle_ids) b.destroy(id);

  auto fo = bench::stats(first_output), co = bench::stats(create_only);
  auto gt = bench::stats(guest_true), ht = bench::stats(host_true);
  auto cs = bench::stats(cold), fc = bench::stats(from_cache);
  std::printf("\naccel: %s; cold starts and new processes: %d each; other rows: %d runs\n\n", std::string(vm::accel_name(b.manager->accel())).c_str(),
              cold_runs, runs);
  std::printf("| what | median | min | max |\n|---|---:|---:|---:|\n");
  bench::row("cold: boot a template, snapshot, restore -> first output", cs);
  bench::row("new process: template from the cache, restore -> first output", fc);
  bench::row("sandbox/create (restore, resume, limits)", co);
  bench::row("create -> first output of `echo`", fo);
  bench::row("exec round trip `true` in the guest", gt);
  bench::row("fork/exec `true` on the host", ht);
  if (bwrap) bench::row("`bwrap --ro-bind / / true` on the host", bench::stats(bwrap_true));
  std::printf("\n| throughput | MB/s |\n|---|---:|\n| guest stdout -> host (%d MiB) | %.1f |\n| host pipe (same dd) | %.1f |\n",
              stdout_mib, guest_mbps, host_mbps);
  if (!pss.empty()) {
    auto p = bench::stats(pss), r = bench::stats(rss);
    std::printf("\n| %zu idle sandboxes | median | min | max |\n|---|---:|---:|---:|\n", pss.size());
    std::printf("| QEMU PSS (MiB) | %.1f | %.1f | %.1f |\n| QEMU RSS (MiB) | %.1f | %.1f | %.1f |\n", p.median, p.min,
                p.max, r.median, r.min, r.max);
  }
  std::printf("\nratios: cold / restored create -> first output %.1fx; new process from the cache / restored %.1fx; exec in guest / fork-exec on host %.1fx", cs.median / fo.median, fc.median / fo.median, gt.median / ht.median);
  if (bwrap) std::printf(", / bwrap %.1fx", gt.median / bench::stats(bwrap_true).median);
  std::printf("; guest / host throughput %.2f\n", host_mbps > 0 ? guest_mbps / host_mbps : 0.0);
  return 0;
}
