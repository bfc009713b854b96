// bench/egress: what the egress proxy costs a guest's HTTP traffic, on loopback, in one run,
// against a direct peer (issue 5's benchmark).
//
//   lockroom-bench-egress [--runs N] [--requests N] [--download-mb N] [--guest-requests N] [--no-guest]
//
// A small HTTP server on 127.0.0.1 (bench_http_server.h) serves every row. Host rows, each run
// in turn on one libuv loop with the same client code (host_client.h): --requests small
// requests on one keep-alive connection (latency of each) and one --download-mb MB download
// (MB/s), (a) direct over TCP, (b) through the host proxy engine with the benchmark playing the
// guest side in memory over the ClientStream interface (the engine alone), (b') the same with the
// guest side on a socketpair. Guest rows (guest_runs.h): busybox wget in a real sandbox through
// the in-guest proxy, and the same wget against busybox httpd on the guest's own loopback.
// Prints Markdown tables (medians over the runs, p90, ratios against direct) and the load.
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <uv.h>

#include "bench/common/bench_stats.h"
#include "bench/egress/bench_http_server.h"
#include "bench/egress/guest_runs.h"
#include "bench/egress/host_client.h"
#include "server/egress/engine/proxy.h"
#include "server/egress/policy/policy_json.h"

using namespace lockroom;
using namespace lockroom::bench;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kWarmupRequests = 20;

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  std::size_t at = static_cast<std::size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(at, values.size() - 1)];
}

struct Row {
  std::string name;
  std::vector<double> median_ms;  // per run
  std::vector<double> p90_ms;
  std::vector<double> mbps;
  std::vector<double> client_cpu_ms;  // CPU time of the client's thread during the download
  std::vector<double> proxy_cpu_ms;   // of the proxy's thread (when it is another one)
};

double cpu_ms(clockid_t clock) {
  timespec now{};
  clock_gettime(clock, &now);
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
}

// One host row of one run: warm-up, `requests` small requests, one download. CPU time is taken
// on the calling thread and, when given, on the proxy's (wall-clock numbers on a shared machine
// swing with the load; CPU time per byte much less).
Result<void> measure(HttpBenchClient& client, const std::string& small, const std::string& big, std::uint64_t big_bytes,
                     int requests, Row& row, std::optional<clockid_t> proxy_clock) {
  for (int i = 0; i < kWarmupRequests; ++i)
    if (auto r = client.exchange(small); !r) return r.error();
  std::vector<double> latency;
  for (int i = 0; i < requests; ++i) {
    auto start = Clock::now();
    auto r = client.exchange(small);
    if (!r) return r.error();
    latency.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  clockid_t own_clock = CLOCK_THREAD_CPUTIME_ID;
  double own_cpu = cpu_ms(own_clock), proxy_cpu = proxy_clock ? cpu_ms(*proxy_clock) : 0;
  auto start = Clock::now();
  auto r = client.exchange(big);
  if (!r) return r.error();
  if (*r != big_bytes) return make_error(ErrorCode::kInternal, "the download had " + std::to_string(*r) + " bytes");
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  row.client_cpu_ms.push_back(cpu_ms(own_clock) - own_cpu);
  if (proxy_clock) row.proxy_cpu_ms.push_back(cpu_ms(*proxy_clock) - proxy_cpu);
  row.median_ms.push_back(percentile(latency, 0.5));
  row.p90_ms.push_back(percentile(latency, 0.9));
  row.mbps.push_back(static_cast<double>(big_bytes) / seconds / 1e6);
  return {};
}

// Runs `work` on a thread with a loop of its own while `main_loop` (the proxy's) keeps running.
Result<void> on_client_thread(uv_loop_t* main_loop, const std::function<Result<void>(uv_loop_t*)>& work) {
  uv_async_t done;
  uv_async_init(main_loop, &done, [](uv_async_t* async) { uv_stop(async->loop); });
  Result<void> result;
  std::thread thread([&] {
    uv_loop_t loop;
    uv_loop_init(&loop);
    result = work(&loop);
    uv_run(&loop, UV_RUN_DEFAULT);  // the client's close callbacks
    uv_loop_close(&loop);
    uv_async_send(&done);
  });
  uv_run(main_loop, UV_RUN_DEFAULT);
  thread.join();
  uv_close(reinterpret_cast<uv_handle_t*>(&done), nullptr);
  uv_run(main_loop, UV_RUN_NOWAIT);
  return result;
}

Result<std::unique_ptr<egress::Proxy>> make_proxy(uv_loop_t* loop, std::uint16_t port) {
  nlohmann::json rules = nlohmann::json::array(
      {{{"action", "allow"}, {"host", "127.0.0.1"}, {"ports", nlohmann::json::array({port})}, {"name", "bench-server"}}});
  auto policy = egress::parse_policy(nlohmann::json{{"rules", rules}, {"defaultAllow", false}});
  if (!policy) return policy.error();
  egress::ProxyOptions options;
  options.sandbox_id = "sb-bench";
  options.policy = std::move(policy.value());
  return egress::Proxy::create(loop, std::move(options));
}

void print_host_table(const std::vector<Row>& rows, double big_mb) {
  double direct_median = stats(rows[0].median_ms).median, direct_mbps = stats(rows[0].mbps).median;
  std::printf("| path | median latency | p90 latency | added median | download | share of direct | runs (MB/s) |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (const Row& row : rows) {
    double median = stats(row.median_ms).median, p90 = stats(row.p90_ms).median, mbps = stats(row.mbps).median;
    std::string each;
    for (double v : row.mbps) each += (each.empty() ? "" : ", ") + std::to_string(static_cast<int>(v + 0.5));
    std::printf("| %s | %.3f ms | %.3f ms | %+.3f ms | %.0f MB/s | %.0f%% | %s |\n", row.name.c_str(), median, p90,
                median - direct_median, mbps, 100 * mbps / direct_mbps, each.c_str());
  }
  // CPU time per download: what each thread spent, whatever else ran on the machine.
  std::printf("\n| path | client thread CPU per download | proxy thread CPU per download | proxy's own ceiling |\n");
  std::printf("|---|---|---|---|\n");
  for (std::size_t r = 0; r < rows.size(); ++r) {
    double client = stats(rows[r].client_cpu_ms).median;
    double proxy = rows[r].proxy_cpu_ms.empty() ? 0 : stats(rows[r].proxy_cpu_ms).median;
    std::string proxy_text = r == 0 ? "—" : r == 1 ? "(same thread)" : std::to_string(static_cast<int>(proxy + 0.5)) + " ms";
    double proxy_work = r == 1 ? client : proxy;
    std::string ceiling = r == 0 ? "—" : std::to_string(static_cast<int>(big_mb * 1000 / proxy_work + 0.5)) + " MB/s";
    std::printf("| %s | %.0f ms | %s | %s |\n", rows[r].name.c_str(), client, proxy_text.c_str(), ceiling.c_str());
  }
  // The throughput target per run, each against the direct download of the same run.
  for (std::size_t r = 1; r < rows.size(); ++r) {
    std::string shares;
    for (std::size_t i = 0; i < rows[r].mbps.size(); ++i)
      shares += (shares.empty() ? "" : ", ") + std::to_string(static_cast<int>(100 * rows[r].mbps[i] / rows[0].mbps[i] + 0.5)) + "%";
    std::printf("\n%s, share of the same run's direct download: %s", rows[r].name.c_str(), shares.c_str());
  }
  std::printf("\n");
}

void print_guest_table(const GuestResults& guest, double direct_median_ms, double direct_mbps) {
  std::printf("| path (%s guest) | median latency | p90 latency | download | vs host direct (latency, throughput) |\n",
              guest.accel.c_str());
  std::printf("|---|---|---|---|---|\n");
  auto line = [&](const char* name, const GuestRow& row) {
    double median = percentile(row.latency_ms, 0.5), p90 = percentile(row.latency_ms, 0.9);
    std::printf("| %s | %.1f ms | %.1f ms | %.1f MB/s | %.0f×, %.1f%% |\n", name, median, p90, row.download_mbps,
                median / direct_median_ms, 100 * row.download_mbps / direct_mbps);
  };
  line("guest wget → in-guest proxy → host proxy → server", guest.through_proxy);
  line("guest wget → busybox httpd on the guest's loopback", guest.guest_local);
  std::printf("\nthrough the proxy vs the guest's own loopback: latency %+.1f ms (median), throughput %.0f%%\n",
              percentile(guest.through_proxy.latency_ms, 0.5) - percentile(guest.guest_local.latency_ms, 0.5),
              100 * guest.through_proxy.download_mbps / guest.guest_local.download_mbps);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lockroom egress benchmark"};
  int runs = 5, requests = 1000, guest_requests = 1000, download_mb = 100;
  bool no_guest = false;
  app.add_option("--runs", runs, "host runs (each: every host row once)")->check(CLI::Range(1, 100));
  app.add_option("--requests", requests, "small requests per host row")->check(CLI::Range(10, 100000));
  app.add_option("--download-mb", download_mb, "size of the download in MB (10^6 bytes)")->check(CLI::Range(1, 150));
  app.add_option("--guest-requests", guest_requests, "small requests from the guest")->check(CLI::Range(10, 10000));
  app.add_flag("--no-guest", no_guest, "host rows only (no sandbox)");
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::warn);

  std::string error;
  auto server = BenchHttpServer::start(error);
  if (!server) {
    std::cerr << "lockroom-bench-egress: " << error << "\n";
    return 1;
  }
  std::uint64_t big_bytes = static_cast<std::uint64_t>(download_mb) * 1000000;
  std::string authority = "127.0.0.1:" + std::to_string(server->port());
  std::string direct_small = "GET /small HTTP/1.1\r\nHost: " + authority + "\r\n\r\n";
  std::string direct_big = "GET /big/" + std::to_string(big_bytes) + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n";
  std::string proxy_small = "GET http://" + authority + "/small HTTP/1.1\r\nHost: " + authority + "\r\n\r\n";
  std::string proxy_big = "GET http://" + authority + "/big/" + std::to_string(big_bytes) + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n";

  uv_loop_t loop;
  uv_loop_init(&loop);
  auto proxy = make_proxy(&loop, server->port());
  if (!proxy) {
    std::cerr << "lockroom-bench-egress: " << proxy.error().message << "\n";
    return 1;
  }
  std::vector<Row> rows(3);
  rows[0].name = "direct (TCP)";
  rows[1].name = "host proxy engine (guest side in memory)";
  rows[2].name = "host proxy engine + socketpair to the guest side";
  // Each row's measurement. The direct client and the socketpair's guest side run on a thread of
  // their own (a guest's client is never on the proxy's thread); the in-memory guest side can
  // only live on the proxy's loop.
  clockid_t proxy_thread_clock;
  pthread_getcpuclockid(pthread_self(), &proxy_thread_clock);
  auto measure_on = [&](uv_loop_t* on, Result<std::unique_ptr<Transport>> transport, bool proxied, Row& row,
                        std::optional<clockid_t> proxy_clock) -> Result<void> {
    if (!transport) return transport.error();
    HttpBenchClient client(on, std::move(transport.value()));
    return measure(client, proxied ? proxy_small : direct_small, proxied ? proxy_big : direct_big, big_bytes, requests, row,
                   proxy_clock);
  };
  std::vector<std::function<Result<void>(Row&)>> measurements = {
      [&](Row& row) {
        return on_client_thread(&loop, [&](uv_loop_t* client_loop) {
          return measure_on(client_loop, tcp_transport(client_loop, server->port()), false, row, std::nullopt);
        });
      },
      [&](Row& row) { return measure_on(&loop, engine_transport(&loop, **proxy), true, row, std::nullopt); },
      [&](Row& row) -> Result<void> {
        auto fd = guest_socket(&loop, **proxy);
        if (!fd) return fd.error();
        return on_client_thread(&loop, [&](uv_loop_t* client_loop) {
          return measure_on(client_loop, fd_transport(client_loop, *fd), true, row, proxy_thread_clock);
        });
      },
  };
  std::string load_before = load_average();
  int exit_code = 0;
  for (int run = 0; run < runs && exit_code == 0; ++run) {
    std::cerr << "host run " << run + 1 << "/" << runs << " (load " << load_average() << ")\n";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (Result<void> measured = measurements[i](rows[i]); !measured) {
        std::cerr << "lockroom-bench-egress: " << rows[i].name << ": " << measured.error().message << "\n";
        exit_code = 1;
        break;
      }
      // Let the proxy finish the session the client just left.
      for (int spin = 0; spin < 100 && (*proxy)->stats().sessions > 0; ++spin) uv_run(&loop, UV_RUN_NOWAIT);
    }
  }
  std::string load_after = load_average();
  bool closed = false;
  (*proxy)->close([&] { closed = true; });
  while (!closed) uv_run(&loop, UV_RUN_ONCE);
  proxy->reset();
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  if (exit_code != 0) return exit_code;

  std::printf("\n### Host: %d small requests (keep-alive) and one %d MB download per row, %d runs\n\n", requests, download_mb, runs);
  std::printf("load average before / after: %s / %s\n\n", load_before.c_str(), load_after.c_str());
  print_host_table(rows, download_mb);

  if (no_guest) return 0;
  std::cerr << "guest rows (load " << load_average() << "): the guest image is built on first use...\n";
  std::string guest_load_before = load_average();
  auto guest = run_guest_rows(server->port(), guest_requests, big_bytes);
  if (!guest) {
    std::cerr << "lockroom-bench-egress: " << guest.error().message << "\n";
    return 1;
  }
  std::printf("\n### Guest: %d small requests (one busybox wget each) and one %d MB download per row\n\n", guest_requests,
              download_mb);
  std::printf("load average before / after: %s / %s\n\n", guest_load_before.c_str(), load_average().c_str());
  print_guest_table(*guest, stats(rows[0].median_ms).median, stats(rows[0].mbps).median);
  return 0;
}
