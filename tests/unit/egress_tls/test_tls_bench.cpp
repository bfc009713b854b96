// Measurements, not checks: leaf mint time and an in-memory handshake between a server-role and
// a client-role TlsStream (median of 100 each). Hidden from the default run; run with
//   lockroom-egress_tls-tests "[.bench]" -s
#include <stdlib.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "server/egress/tls/tls_stream.h"

using namespace lockroom::egress::tls;

namespace {

using Clock = std::chrono::steady_clock;

double median_us(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

}  // namespace

TEST_CASE("bench: leaf mint and in-memory handshake", "[.bench]") {
  auto ca = SandboxCa::create("bench");
  REQUIRE(ca.ok());
  auto leaves = LeafCerts::create(*ca, 1024);
  REQUIRE(leaves.ok());
  std::shared_ptr<LeafCerts> shared_leaves = std::move(*leaves);

  std::vector<double> mint;
  for (int i = 0; i < 100; ++i) {
    auto start = Clock::now();
    auto leaf = shared_leaves->get("host-" + std::to_string(i) + ".example.test");
    mint.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    REQUIRE(leaf.ok());
  }
  std::vector<double> cached;
  for (int i = 0; i < 100; ++i) {
    auto start = Clock::now();
    auto leaf = shared_leaves->get("host-" + std::to_string(i) + ".example.test");
    cached.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }

  std::string dir = (std::filesystem::temp_directory_path() / "lockroom-tls-bench-XXXXXX").string();
  REQUIRE(mkdtemp(dir.data()));
  std::ofstream(dir + "/ca.pem") << ca->certificate_pem();
  TlsClientOptions options;
  options.use_default_trust_store = false;
  options.extra_ca_files = {dir + "/ca.pem"};
  auto client_context = TlsClientContext::create(options);
  std::filesystem::remove_all(dir);
  REQUIRE(client_context.ok());
  auto server_context = TlsServerContext::create(shared_leaves);
  REQUIRE(server_context.ok());

  std::vector<double> handshake;
  for (int i = 0; i < 100; ++i) {
    auto start = Clock::now();
    auto server = TlsStream::accept(*server_context, "");
    auto client = TlsStream::connect(*client_context, "host-1.example.test");
    REQUIRE(server.ok());
    REQUIRE(client.ok());
    for (int round = 0; round < 10 && !((*client)->handshake_done() && (*server)->handshake_done()); ++round) {
      REQUIRE((*server)->feed_ciphertext((*client)->take_ciphertext()).ok());
      REQUIRE((*client)->feed_ciphertext((*server)->take_ciphertext()).ok());
    }
    handshake.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    REQUIRE((*client)->handshake_done());
    REQUIRE((*server)->handshake_done());
  }

  std::printf("leaf mint (P-256, new name):   median %.0f us, max %.0f us\n", median_us(mint),
              *std::max_element(mint.begin(), mint.end()));
  std::printf("leaf lookup (cached):          median %.1f us\n", median_us(cached));
  std::printf("TLS 1.3 handshake pair in memory (server+client TlsStream, cached leaf, verify on): median %.0f us\n",
              median_us(handshake));
}
