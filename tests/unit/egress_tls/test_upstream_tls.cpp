// The pieces together as the proxy engine will use them: UpstreamConnect opens the socket on a
// libuv loop, a client-role TlsStream runs over it, and the request gets the test server's answer.
#include <catch2/catch.hpp>

#include <chrono>
#include <optional>

#include "server/egress/tls/tls_stream.h"
#include "server/egress/tls/upstream.h"
#include "tests/unit/egress_tls/https_test_server.h"
#include "tests/unit/uv_test_util.h"

using namespace lockroom::egress::tls;
using lockroom::Result;

TEST_CASE("HTTPS through UpstreamConnect and a client TlsStream on a libuv loop", "[upstream][tls_stream]") {
  std::string error;
  auto server = lockroom::testing::HttpsTestServer::start({}, &error);
  INFO(error);
  REQUIRE(server);
  TlsClientOptions options;
  options.extra_ca_files = {server->ca_file()};
  auto context = TlsClientContext::create(options);
  REQUIRE(context.ok());
  auto tls = TlsStream::connect(*context, "localhost");
  REQUIRE(tls.ok());
  TlsStream& stream = **tls;
  REQUIRE(stream.write_plaintext("GET /through-the-loop HTTP/1.1\r\nHost: localhost\r\n\r\n").ok());

  lockroom::testing::TestLoop loop(10000);
  std::unique_ptr<UpstreamConnection> connection;
  std::string response;
  std::string failure;
  auto pump_out = [&] {
    std::string out = stream.take_ciphertext();
    if (!out.empty()) connection->write(std::move(out));
  };
  auto attempt = UpstreamConnect::start(
      loop.get(), {"localhost", server->port(), {}}, [](const sockaddr_storage&) -> Result<void> { return {}; },
      [&](Result<std::unique_ptr<UpstreamConnection>> result) {
        if (!result) {
          failure = result.error().message;
          return;
        }
        connection = std::move(result.value());
        connection->start({[&](std::string_view bytes) {
                             if (auto fed = stream.feed_ciphertext(bytes); !fed) failure = fed.error().message;
                             response += stream.read_plaintext();
                             pump_out();
                             if (stream.peer_closed() || !failure.empty()) connection->close();
                           },
                           [&] { connection->close(); },
                           [&](const std::string& why) {
                             failure = why;
                             connection->close();
                           },
                           {}});
        pump_out();  // the ClientHello
      });
  loop.run();
  INFO(failure);
  CHECK(failure.empty());
  CHECK(response == server->response());
  CHECK(stream.peer_closed());
  CHECK(server->last_request().rfind("GET /through-the-loop ", 0) == 0);
  connection.reset();
  attempt.reset();
  CHECK(loop.finish() == 0);
  CHECK_FALSE(loop.timed_out());
}
