// lockroom-bench-rpc: request round-trip throughput of a JSON-RPC server spoken to over stdio.
//
// Spawns the server command given after `--` (PeerProcess), does LSP's initialize handshake, then
// measures `lockroom/echo` round trips with a small, realistic params object (~200 bytes):
//   - sequential: one request in flight; send, wait for the reply, repeat. Latency-bound: it
//     measures a full wake-up of both processes per request, as an editor's one-at-a-time calls do.
//   - pipelined: up to --window requests in flight; throughput-bound.
// Every reply is checked (id known and not answered before, no error, result equal to the params
// sent); replies are collected while a repetition is timed and checked right after it, so the
// driver's JSON parsing does not count against either server. Each mode has a warm-up, then
// --reps repetitions; it reports the median requests/s, and for the sequential mode p50/p99 of
// all measured round trips. Finally `shutdown` + `exit`, and the server must exit with code 0.
// Any failure exits non-zero with the reason on stderr. CPU placement (taskset) is the caller's:
// bench/run-rpc-roundtrip.sh.
//
// Output: human-readable lines on stderr; on stdout one `result` line per mode, as key=value
// pairs, for bench/run-rpc-roundtrip.sh to tabulate.
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "echo_client.h"
#include "peer.h"

namespace {

using lockroom::bench::EchoClient;
using lockroom::bench::json;
using lockroom::bench::PeerError;
using lockroom::bench::PeerProcess;
using lockroom::bench::ReplyLog;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string name;
  int reps = 5;
  long sequential = 20000;
  long pipelined = 100000;
  long window = 64;
  long warmup = 5000;
  long timeout_ms = 10000;
  bool run_sequential = true;
  bool run_pipelined = true;
  std::vector<std::string> command;
};

const char* kUsage =
    "usage: lockroom-bench-rpc [options] -- SERVER-COMMAND [ARGS...]\n"
    "  --name NAME       label for the results (default: the command's file name)\n"
    "  --reps R          measured repetitions per mode (5)\n"
    "  --sequential N    requests per sequential repetition (20000; 0 skips the mode)\n"
    "  --pipelined N     requests per pipelined repetition (100000; 0 skips the mode)\n"
    "  --window W        requests in flight in the pipelined mode (64)\n"
    "  --warmup N        unmeasured requests before each mode (5000)\n"
    "  --timeout-ms T    fail when the server is silent this long (10000)\n";

long parse_count(const std::string& flag, const char* value, long min) {
  char* end = nullptr;
  long n = value ? std::strtol(value, &end, 10) : 0;
  if (!value || *end != '\0' || n < min) {
    std::cerr << "lockroom-bench-rpc: " << flag << " needs an integer >= " << min << ", got "
              << (value ? value : "nothing") << "\n" << kUsage;
    std::exit(2);
  }
  return n;
}

Options parse_options(int argc, char** argv) {
  Options o;
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--") {
      ++i;
      break;
    } else if (a == "--name" && v) {
      o.name = v;
      ++i;
    } else if (a == "--reps") {
      o.reps = static_cast<int>(parse_count(a, v, 1)), ++i;
    } else if (a == "--sequential") {
      o.sequential = parse_count(a, v, 0), ++i;
    } else if (a == "--pipelined") {
      o.pipelined = parse_count(a, v, 0), ++i;
    } else if (a == "--window") {
      o.window = parse_count(a, v, 1), ++i;
    } else if (a == "--warmup") {
      o.warmup = parse_count(a, v, 0), ++i;
    } else if (a == "--timeout-ms") {
      o.timeout_ms = parse_count(a, v, 1), ++i;
    } else {
      std::cerr << "lockroom-bench-rpc: unknown option " << a << "\n" << kUsage;
      std::exit(2);
    }
  }
  for (; i < argc; ++i) o.command.emplace_back(argv[i]);
  if (o.command.empty()) {
    std::cerr << "lockroom-bench-rpc: no server command after --\n" << kUsage;
    std::exit(2);
  }
  if (o.name.empty()) o.name = o.command[0].substr(o.command[0].find_last_of('/') + 1);
  o.run_sequential = o.sequential > 0;
  o.run_pipelined = o.pipelined > 0;
  return o;
}

// CPU seconds (user + system) used so far by a process, read from /proc; negative if unknown.
double process_cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return -1;
  std::size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(stat.substr(close + 2));
  std::string f;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::stoull(f);
    if (i == 15) stime = std::stoull(f);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double self_cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return s(ru.ru_utime) + s(ru.ru_stime);
}

struct Rep {
  double seconds = 0;
  double server_cpu = -1;
  double driver_cpu = 0;
};

// Window 1: send, wait, repeat. Appends each round trip's duration in microseconds to `latencies`.
Rep run_sequential(PeerProcess& peer, EchoClient& client, ReplyLog& log, long n, std::vector<double>* latencies) {
  Rep rep;
  log.clear();
  std::int64_t first = client.next_id();
  double server0 = process_cpu_seconds(peer.pid()), driver0 = self_cpu_seconds();
  auto start = Clock::now();
  for (long i = 0; i < n; ++i) {
    client.queue_echo();
    auto t0 = Clock::now();
    peer.flush();
    std::string_view reply = peer.wait_message();
    auto t1 = Clock::now();
    log.add(reply);
    if (latencies) latencies->push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  rep.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  double server1 = process_cpu_seconds(peer.pid());
  if (server0 >= 0 && server1 >= 0) rep.server_cpu = server1 - server0;
  rep.driver_cpu = self_cpu_seconds() - driver0;
  client.check_echoes(log, first, static_cast<std::size_t>(n), true);
  return rep;
}

// Up to `window` requests in flight; a new one goes out as each reply comes back.
Rep run_pipelined(PeerProcess& peer, EchoClient& client, ReplyLog& log, long n, long window) {
  Rep rep;
  log.clear();
  std::int64_t first = client.next_id();
  long sent = 0, received = 0;
  double server0 = process_cpu_seconds(peer.pid()), driver0 = self_cpu_seconds();
  auto start = Clock::now();
  while (received < n) {
    while (sent < n && sent - received < window) {
      client.queue_echo();
      ++sent;
    }
    peer.pump();
    for (std::string_view m = peer.take_message(); m.data() != nullptr; m = peer.take_message()) {
      if (received == n) throw PeerError("more replies than requests");
      log.add(m);
      ++received;
    }
  }
  rep.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  double server1 = process_cpu_seconds(peer.pid());
  if (server0 >= 0 && server1 >= 0) rep.server_cpu = server1 - server0;
  rep.driver_cpu = self_cpu_seconds() - driver0;
  client.check_echoes(log, first, static_cast<std::size_t>(n), false);
  return rep;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

double percentile(std::vector<double>& sorted, double p) {
  std::size_t i = static_cast<std::size_t>(p / 100.0 * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

std::string fmt(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// Prints one mode's repetitions and its `result` line.
void report(const Options& o, const std::string& mode, long n, const std::vector<Rep>& reps, std::vector<double>* latencies) {
  std::vector<double> rates, server_us, driver_us;
  for (std::size_t i = 0; i < reps.size(); ++i) {
    const Rep& r = reps[i];
    double rate = static_cast<double>(n) / r.seconds;
    rates.push_back(rate);
    if (r.server_cpu >= 0) server_us.push_back(r.server_cpu * 1e6 / static_cast<double>(n));
    driver_us.push_back(r.driver_cpu * 1e6 / static_cast<double>(n));
    std::cerr << "  " << o.name << " " << mode << " rep " << i + 1 << ": " << fmt(rate, 0) << " req/s ("
              << n << " in " << fmt(r.seconds, 3) << " s; server CPU "
              << (r.server_cpu >= 0 ? fmt(r.server_cpu * 1e6 / static_cast<double>(n), 1) : "?") << " us/req, driver CPU "
              << fmt(r.driver_cpu * 1e6 / static_cast<double>(n), 1) << " us/req)\n";
  }
  std::cout << "result server=" << o.name << " mode=" << mode << " n=" << n << " reps=" << reps.size()
            << " rps=" << fmt(median(rates), 0) << " rps_min=" << fmt(*std::min_element(rates.begin(), rates.end()), 0)
            << " rps_max=" << fmt(*std::max_element(rates.begin(), rates.end()), 0)
            << " server_cpu_us=" << (server_us.empty() ? "-" : fmt(median(server_us), 1))
            << " driver_cpu_us=" << fmt(median(driver_us), 1);
  if (latencies && !latencies->empty()) {
    std::sort(latencies->begin(), latencies->end());
    std::cout << " p50_us=" << fmt(percentile(*latencies, 50), 1) << " p99_us=" << fmt(percentile(*latencies, 99), 1)
              << " max_us=" << fmt(latencies->back(), 1);
  }
  std::cout << std::endl;
}

int run(const Options& o) {
  PeerProcess peer(o.command, std::chrono::milliseconds(o.timeout_ms));
  EchoClient client(peer);
  ReplyLog log;
  log.reserve(static_cast<std::size_t>(std::max({o.sequential, o.pipelined, o.warmup})), 320);
  json init = client.call("initialize", json{{"processId", static_cast<long>(getpid())},
                                             {"clientInfo", {{"name", "lockroom-bench-rpc"}, {"version", "1"}}},
                                             {"rootUri", nullptr},
                                             {"capabilities", json::object()}});
  if (!init.is_object() || !init.contains("capabilities")) throw PeerError("initialize result has no capabilities: " + init.dump());
  client.notify("initialized", json::object());

  if (o.run_sequential) {
    std::string mode = "sequential";
    if (o.warmup) run_sequential(peer, client, log, o.warmup, nullptr);
    std::vector<Rep> reps;
    std::vector<double> latencies;
    latencies.reserve(static_cast<std::size_t>(o.sequential) * static_cast<std::size_t>(o.reps));
    for (int r = 0; r < o.reps; ++r) reps.push_back(run_sequential(peer, client, log, o.sequential, &latencies));
    report(o, mode, o.sequential, reps, &latencies);
  }
  if (o.run_pipelined) {
    std::string mode = "pipelined-" + std::to_string(o.window);
    if (o.warmup) run_pipelined(peer, client, log, o.warmup, o.window);
    std::vector<Rep> reps;
    for (int r = 0; r < o.reps; ++r) reps.push_back(run_pipelined(peer, client, log, o.pipelined, o.window));
    report(o, mode, o.pipelined, reps, nullptr);
  }

  json shut = client.call("shutdown", nullptr);
  if (!shut.is_null()) throw PeerError("shutdown answered " + shut.dump() + " instead of null");
  client.notify("exit", nullptr);
  int code = peer.close_and_wait();
  if (code != 0) throw PeerError("the server exited with code " + std::to_string(code) + " after shutdown and exit");
  std::cerr << "  " << o.name << ": shutdown + exit, exit code 0\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);  // a dead server must show up as EPIPE, not kill the driver
  Options o = parse_options(argc, argv);
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::cerr << "lockroom-bench-rpc: " << o.name << ": " << e.what() << "\n";
    return 1;
  }
}
