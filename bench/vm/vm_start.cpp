// bench/vm: how fast a sandbox starts, and what an idle one costs the host.
//
//   lockroom-bench-vm [--runs N] [--idle N] [--tb-size MiB]
//
// In one run, on this machine's accelerator: cold boot of the default image (QEMU launched ->
// the guest agent's first byte on the channel) vs restore from a template snapshot (QEMU
// launched -> the restored agent echoes a ping), median/min/max of N each; then N_idle restored
// guests kept alive and idle, with each QEMU's PSS and RSS. The guest runs a stand-in echo
// agent (tests/integration/echo_agent.cpp). Prints a Markdown table.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <uv.h>

#include "server/common/paths.h"
#include "server/vm/accel.h"
#include "server/vm/host_tsc.h"
#include "server/vm/image/image_builder.h"
#include "server/vm/vm.h"
#include "server/vm/vm_template.h"
#include "bench/common/bench_stats.h"
#include "tests/integration/echo_check.h"

using namespace lockroom;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  int runs = 10;
  int idle = 5;
  int tb_size = 64;
};

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// Starts one VM and runs the loop until it is ready; returns ms from launch, or nothing.
std::optional<double> start_one(uv_loop_t* loop, vm::VmSpec spec, std::unique_ptr<vm::Vm>& out, bool keep) {
  std::optional<Result<void>> ready;
  auto t0 = Clock::now();
  double took = 0;
  vm::VmCallbacks cb;
  cb.on_ready = [&](Result<void> r) {
    took = ms_since(t0);
    ready = r;
    uv_stop(loop);
  };
  auto vm = vm::Vm::start(loop, spec, cb);
  if (!vm) {
    std::cerr << "cannot start: " << vm.error().message << "\n";
    return std::nullopt;
  }
  out = std::move(*vm);
  while (!ready) uv_run(loop, UV_RUN_ONCE);
  if (!ready->ok()) {
    std::cerr << "guest failed: " << ready->error().message << "\n";
    return std::nullopt;
  }
  if (!keep) {
    out->kill();
    while (out->running()) uv_run(loop, UV_RUN_ONCE);
    out.reset();
  }
  return took;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    int value = std::atoi(argv[i + 1]);
    if (flag == "--runs") o.runs = std::max(1, value);
    else if (flag == "--idle") o.idle = std::max(0, value);
    else if (flag == "--tb-size") o.tb_size = std::max(1, value);
  }

  vm::image::ImageBuildOptions build;
  build.cache = default_paths().cache;
  build.agent = LOCKROOM_ECHO_AGENT;
  auto image = vm::image::ensure_image(build, [](const std::string& l) { std::cerr << "image: " << l << "\n"; });
  if (!image) {
    std::cerr << "cannot build the guest image: " << image.error().message << "\n";
    return 1;
  }
  char tmpl[] = "/tmp/lockroom-bench-vm-XXXXXX";
  fs::path state = mkdtemp(tmpl);

  auto accel = vm::choose_accel(vm::probe_host_virt(), vm::AccelPreference::kAuto);
  vm::VmSpec spec;
  spec.state_root = state;
  spec.name = "bench";
  spec.qemu.accel = accel.accel;
  spec.qemu.tcg_tb_size_mib = o.tb_size;
  spec.qemu.kernel = image->kernel();
  spec.qemu.initrd = image->initrd();
  vm::KernelCmdlineOptions k;
  if (accel.accel == vm::Accel::kTcg) k.tsc_khz = vm::host_tsc_khz();
  spec.qemu.kernel_cmdline = vm::kernel_cmdline(k);
  spec.boot_timeout = 180s;

  uv_loop_t loop;
  uv_loop_init(&loop);
  int rc = 0;
  {
    std::vector<double> cold, restore;
    for (int i = 0; i < o.runs; ++i) {
      std::unique_ptr<vm::Vm> vm;
      auto t = start_one(&loop, spec, vm, false);
      if (!t) return 1;
      cold.push_back(*t);
      std::cerr << "cold boot " << i + 1 << "/" << o.runs << ": " << static_cast<long>(*t) << " ms\n";
    }

    std::shared_ptr<vm::VmTemplate> tpl;
    std::string failure;
    auto t0 = Clock::now();
    vm::VmTemplate::create(&loop, spec, [&](Result<std::shared_ptr<vm::VmTemplate>> r) {
      if (r) tpl = *r;
      else failure = r.error().message;
    });
    while (!tpl && failure.empty()) uv_run(&loop, UV_RUN_ONCE);
    if (!tpl) {
      std::cerr << "template failed: " << failure << "\n";
      return 1;
    }
    double template_ms = ms_since(t0);

    for (int i = 0; i < o.runs; ++i) {
      std::unique_ptr<vm::Vm> vm;
      auto rspec = tpl->restore_spec("restore", testing::echo_readiness());
      auto t = start_one(&loop, rspec, vm, false);
      if (!t) return 1;
      restore.push_back(*t);
      std::cerr << "restore " << i + 1 << "/" << o.runs << ": " << static_cast<long>(*t) << " ms\n";
    }

    std::vector<std::unique_ptr<vm::Vm>> idle(static_cast<std::size_t>(o.idle));
    for (auto& vm : idle)
      if (!start_one(&loop, tpl->restore_spec("idle", testing::echo_readiness()), vm, true)) return 1;
    // Let them settle, then read their memory.
    uv_timer_t settle;
    uv_timer_init(&loop, &settle);
    uv_timer_start(&settle, [](uv_timer_t* t) { uv_stop(t->loop); }, 3000, 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_close(reinterpret_cast<uv_handle_t*>(&settle), nullptr);
    std::vector<double> pss, rss;
    for (auto& vm : idle) {
      pss.push_back(static_cast<double>(bench::rollup_kb(vm->pid(), "Pss")) / 1024.0);
      rss.push_back(static_cast<double>(bench::rollup_kb(vm->pid(), "Rss")) / 1024.0);
    }
    for (auto& vm : idle) vm->kill();
    while (std::any_of(idle.begin(), idle.end(), [](auto& v) { return v->running(); })) uv_run(&loop, UV_RUN_ONCE);
    idle.clear();

    auto c = bench::stats(cold), r = bench::stats(restore);
    std::printf("\nvm start, accel %s, tb-size %d MiB, %d runs each (ms from QEMU launch to the agent answering)\n\n",
                vm::accel_name(accel.accel), o.tb_size, o.runs);
    std::printf("| what | median | min | max |\n|---|---:|---:|---:|\n");
    std::printf("| cold boot | %.0f | %.0f | %.0f |\n", c.median, c.min, c.max);
    std::printf("| restore from template | %.0f | %.0f | %.0f |\n", r.median, r.min, r.max);
    std::printf("\ncold / restore (medians): %.1fx\n", c.median / r.median);
    std::printf("template: booted in %lld ms, snapshot %llu bytes in %lld ms (create total %.0f ms)\n",
                static_cast<long long>(tpl->boot_time().count()), static_cast<unsigned long long>(tpl->snapshot().state_bytes),
                static_cast<long long>(tpl->snapshot().took.count()), template_ms);
    if (!pss.empty()) {
      auto p = bench::stats(pss), s = bench::stats(rss);
      std::printf("\n%d idle restored guests, per QEMU process: PSS median %.1f MiB (%.1f–%.1f), RSS median %.1f MiB\n",
                  o.idle, p.median, p.min, p.max, s.median);
    }
    tpl.reset();
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  if (uv_loop_close(&loop) != 0) {
    std::cerr << "bug: handles left open\n";
    rc = 1;
  }
  fs::remove_all(state);
  return rc;
}
