// Hidden benchmark ([.bench]): what the host proxy adds on loopback, measured against a direct
// connection to the same server in the same run. 1,000 small requests on one keep-alive
// connection (median latency added; target <= 1 ms) and one 100 MB download (throughput through
// the proxy as a share of direct; target >= 80%). Run:
//   lockroom-egress_engine-tests "[.bench]"
// The guest side here is a socketpair (one more kernel socket hop than the engine needs) and the
// numbers are wall-clock, which swing widely on a loaded machine; bench/egress measures the engine
// alone too, with CPU time per download, and is what docs/benchmarks/egress.md reports.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "tests/unit/egress_engine/engine_test_support.h"

using namespace lockroom::egress;
using namespace lockroom::testing;

namespace {

using Clock = std::chrono::steady_clock;

int connect_direct(std::uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  set_socket_timeouts(fd, 30);
  return fd;
}

// Runs `count` requests on one connection; returns each one's latency in microseconds.
std::vector<double> small_requests(int fd, const std::string& request, int count) {
  std::vector<double> latencies;
  for (int i = 0; i < count; ++i) {
    auto start = Clock::now();
    REQUIRE(send_all(fd, request));
    HttpAnswer answer = read_answer(socket_reader(fd));
    REQUIRE(answer.status == 200);
    latencies.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  return latencies;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Seconds to read one response with a body of `size` bytes (raw reads of 1 MiB, so the client's
// own parsing does not limit what is measured).
double download(int fd, const std::string& request, std::size_t size) {
  std::vector<char> buffer(1u << 20);
  auto start = Clock::now();
  REQUIRE(send_all(fd, request));
  std::string head;
  std::size_t body = 0;
  while (body < size) {
    long got = recv(fd, buffer.data(), buffer.size(), 0);
    REQUIRE(got > 0);
    if (head.find("\r\n\r\n") == std::string::npos) {
      head.append(buffer.data(), static_cast<std::size_t>(got));
      auto end = head.find("\r\n\r\n");
      if (end != std::string::npos) body = head.size() - end - 4;
    } else {
      body += static_cast<std::size_t>(got);
    }
  }
  REQUIRE(body == size);
  REQUIRE(head.rfind("HTTP/1.1 200", 0) == 0);
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

TEST_CASE("bench: proxy overhead on loopback, direct vs through the proxy", "[.bench]") {
  auto server = HttpTestServer::start();
  REQUIRE(server);
  constexpr int kRequests = 1000;
  constexpr std::size_t kDownload = 100u << 20;
  std::string port = std::to_string(server->port());
  std::string origin_form = "GET /small HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  std::string absolute_form = "GET http://127.0.0.1:" + port + "/small HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  std::string big_origin = "GET /big/" + std::to_string(kDownload) + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  std::string big_absolute = "GET http://127.0.0.1:" + port + "/big/" + std::to_string(kDownload) +
                             " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

  int direct = connect_direct(server->port());
  std::vector<double> direct_latency = small_requests(direct, origin_form, kRequests);
  double direct_seconds = download(direct, big_origin, kDownload);
  ::close(direct);

  ProxyOptions options;
  options.policy = policy_from(R"({"rules":[{"action":"allow","host":"127.0.0.1"}],"defaultAllow":false})");
  ProxyHarness harness(std::move(options));
  std::vector<double> proxy_latency;
  double proxy_seconds = 0;
  harness.run_http([&](int fd) {
    proxy_latency = small_requests(fd, absolute_form, kRequests);
    proxy_seconds = download(fd, big_absolute, kDownload);
  });
  REQUIRE(harness.events.size() == kRequests + 1);

  double added_ms = (median(proxy_latency) - median(direct_latency)) / 1000.0;
  double direct_mbps = kDownload / direct_seconds / 1e6;
  double proxy_mbps = kDownload / proxy_seconds / 1e6;
  double ratio = proxy_mbps / direct_mbps;
  std::printf("\negress proxy on loopback (host side)\n");
  std::printf("  %-34s %10s %10s\n", "", "direct", "proxy");
  std::printf("  %-34s %10.3f %10.3f\n", "median latency, 1000 requests (ms)", median(direct_latency) / 1000.0,
              median(proxy_latency) / 1000.0);
  std::printf("  %-34s %10.1f %10.1f\n", "100 MB download (MB/s)", direct_mbps, proxy_mbps);
  std::printf("  added median latency %.3f ms (target <= 1 ms); throughput %.0f%% of direct (target >= 80%%)\n",
              added_ms, ratio * 100);
  std::printf("  peak bytes held by the proxy: %zu\n", harness.proxy().stats().peak_buffered_bytes);
  CHECK(added_ms <= 1.0);
  CHECK(ratio >= 0.8);
  CHECK(harness.close_all() == 0);
}
