// The egress benchmark's guest rows; see guest_runs.h.
#include "bench/egress/guest_runs.h"

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>
#include <uv.h>

#include "server/common/paths.h"
#include "server/core/sandbox_manager.h"
#include "server/egress/policy/policy_json.h"
#include "server/vm/accel.h"

namespace lockroom::bench {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::uint16_t kGuestHttpdPort = 8080;

// Every output line's arrival time, per process, and each process's exit.
struct MarkSink final : core::SandboxEvents {
  std::map<std::string, std::vector<Clock::time_point>> lines;
  std::map<std::string, std::string> output;  // the first 16 KiB, for error messages
  std::map<std::string, core::ProcessExit> exited;
  void state_changed(const std::string&, core::SandboxState, core::StopReason, const std::string&) override {}
  void process_output(const std::string&, core::OutputStream, const core::OutputChunk&) override {}
  void process_bytes(const std::string& pid, core::OutputStream, std::string_view bytes) override {
    auto now = Clock::now();
    for (char c : bytes)
      if (c == '\n') lines[pid].push_back(now);
    auto& out = output[pid];
    if (out.size() < 16384) out.append(bytes.substr(0, 16384 - out.size()));
  }
  void process_exited(const std::string& pid, const core::ProcessExit& exit) override { exited[pid] = exit; }
};

class GuestDriver {
 public:
  GuestDriver() {
    uv_loop_init(&loop_);
    std::string pattern = (std::filesystem::temp_directory_path() / "lockroom-bench-egress-XXXXXX").string();
    if (mkdtemp(pattern.data())) state_dir_ = pattern;
    core::ManagerConfig config;
    config.paths.cache = default_paths().cache;
    config.paths.state = state_dir_;
    config.accel = vm::choose_accel(vm::probe_host_virt(), vm::AccelPreference::kAuto).accel;
    config.agent = LOCKROOM_AGENT;
    manager_ = std::make_unique<core::SandboxManager>(&loop_, config, sink_);
  }
  ~GuestDriver() {
    bool done = false;
    manager_->shutdown([&] { done = true; });
    while (!done) uv_run(&loop_, UV_RUN_ONCE);
    manager_.reset();
    uv_run(&loop_, UV_RUN_DEFAULT);
    uv_loop_close(&loop_);
    std::error_code ignored;
    if (!state_dir_.empty()) std::filesystem::remove_all(state_dir_, ignored);
  }

  const char* accel() const { return vm::accel_name(manager_->accel()); }

  Result<std::string> create(std::uint16_t port) {
    nlohmann::json rules = nlohmann::json::array(
        {{{"action", "allow"}, {"host", "127.0.0.1"}, {"ports", nlohmann::json::array({port})}, {"name", "bench-server"}}});
    auto policy = egress::parse_policy(nlohmann::json{{"rules", rules}, {"defaultAllow", false}});
    if (!policy) return policy.error();
    core::CreateRequest request;
    request.network = core::NetworkRequest{std::move(policy.value()), {}, {}};
    std::optional<Result<core::CreateResult>> created;
    manager_->create(std::move(request), nullptr, [&](Result<core::CreateResult> r) { created = std::move(r); });
    wait([&] { return created.has_value(); });
    if (!*created) return created->error();
    return (*created)->sandbox_id;
  }

  void destroy(const std::string& sandbox) {
    bool done = false;
    manager_->destroy(sandbox, [&](Result<void>) { done = true; });
    wait([&] { return done; });
  }

  // Runs `script` with sh; the arrival time of each line it printed. Fails unless it exited 0.
  Result<std::vector<Clock::time_point>> run(const std::string& sandbox, const std::string& script) {
    std::optional<Result<std::string>> started;
    manager_->start_process(sandbox, core::ProcessSpec{{"sh", "-c", script}, std::nullopt, {}, std::nullopt},
                            [&](Result<std::string> r) { started = std::move(r); });
    wait([&] { return started.has_value(); });
    if (!*started) return started->error();
    std::string pid = started->value();
    wait([&] { return sink_.exited.count(pid) != 0; });
    const core::ProcessExit& exit = sink_.exited[pid];
    if (exit.exit_code != 0)
      return make_error(ErrorCode::kInternal, "a guest script failed (exit " + std::to_string(exit.exit_code.value_or(-1)) +
                                                  "): " + sink_.output[pid]);
    return sink_.lines[pid];
  }

 private:
  template <typename Done>
  void wait(Done done) {
    while (!done()) uv_run(&loop_, UV_RUN_ONCE);
  }

  uv_loop_t loop_{};
  MarkSink sink_;
  std::string state_dir_;
  std::unique_ptr<core::SandboxManager> manager_;
};

// A loop of `count` wgets, one marker line after each (a failed wget stops the script).
std::string request_loop(const std::string& wget, int count) {
  return "echo go; i=0; while [ $i -lt " + std::to_string(count) + " ]; do " + wget +
         " || exit 3; echo .; i=$((i+1)); done";
}

Result<std::vector<double>> latencies(GuestDriver& driver, const std::string& sandbox, const std::string& script, int count) {
  auto lines = driver.run(sandbox, script);
  if (!lines) return lines.error();
  if (lines->size() != static_cast<std::size_t>(count) + 1)
    return make_error(ErrorCode::kInternal, "expected " + std::to_string(count + 1) + " marker lines, got " +
                                                std::to_string(lines->size()));
  std::vector<double> result;
  for (std::size_t i = 1; i < lines->size(); ++i)
    result.push_back(std::chrono::duration<double, std::milli>((*lines)[i] - (*lines)[i - 1]).count());
  return result;
}

Result<double> download_mbps(GuestDriver& driver, const std::string& sandbox, const std::string& wget, std::uint64_t bytes) {
  auto lines = driver.run(sandbox, "echo go; " + wget + " || exit 3; echo .");
  if (!lines) return lines.error();
  if (lines->size() != 2) return make_error(ErrorCode::kInternal, "expected 2 marker lines around the download");
  double seconds = std::chrono::duration<double>((*lines)[1] - (*lines)[0]).count();
  return static_cast<double>(bytes) / seconds / 1e6;
}

}  // namespace

Result<GuestResults> run_guest_rows(std::uint16_t server_port, int requests, std::uint64_t download_bytes) {
  if (download_bytes > 150'000'000) return make_error(ErrorCode::kInvalidInput, "the guest download is at most 150 MB");
  GuestDriver driver;
  auto sandbox = driver.create(server_port);
  if (!sandbox) return sandbox.error();
  GuestResults results;
  results.accel = driver.accel();
  std::string host = "http://127.0.0.1:" + std::to_string(server_port);
  std::string local = "http://127.0.0.1:" + std::to_string(kGuestHttpdPort);
  // busybox wget has no NO_PROXY: the proxy variables send everything to the proxy; -Y off
  // bypasses it for the guest-local peer.
  std::string proxied = "export no_proxy= NO_PROXY=; ";
  std::string size = std::to_string(download_bytes);
  auto setup = driver.run(*sandbox, "mkdir -p /tmp/www && printf 'hello, guest\\n' > /tmp/www/small && "
                                    "dd if=/dev/zero of=/tmp/www/big bs=1000000 count=" +
                                        std::to_string(download_bytes / 1000000) + " 2>/dev/null && "
                                        "httpd -p 127.0.0.1:" + std::to_string(kGuestHttpdPort) + " -h /tmp/www");
  Result<GuestResults> outcome = results;
  auto fail = [&](const Error& error, const char* what) {
    outcome = make_error(error.code, std::string(what) + ": " + error.message);
  };
  if (!setup) {
    fail(setup.error(), "guest setup");
  } else if (auto proxy_small = latencies(driver, *sandbox, proxied + request_loop("wget -q -O /dev/null " + host + "/small", requests), requests);
             !proxy_small) {
    fail(proxy_small.error(), "guest small requests through the proxy");
  } else if (auto local_small = latencies(driver, *sandbox, request_loop("wget -Y off -q -O /dev/null " + local + "/small", requests), requests);
             !local_small) {
    fail(local_small.error(), "guest small requests on its loopback");
  } else if (auto proxy_big = download_mbps(driver, *sandbox, proxied + "wget -q -O /dev/null " + host + "/big/" + size, download_bytes);
             !proxy_big) {
    fail(proxy_big.error(), "guest download through the proxy");
  } else if (auto local_big = download_mbps(driver, *sandbox, "wget -Y off -q -O /dev/null " + local + "/big", download_bytes);
             !local_big) {
    fail(local_big.error(), "guest download on its loopback");
  } else {
    results.through_proxy = {std::move(*proxy_small), *proxy_big};
    results.guest_local = {std::move(*local_small), *local_big};
    outcome = results;
  }
  driver.destroy(*sandbox);
  return outcome;
}

}  // namespace lockroom::bench
