// TlsStream in the client role (toward upstream) against the loopback HTTPS test server:
// trust through the extra-CA option, and clear errors for a wrong host, an untrusted CA and an
// expired certificate.
#include <catch2/catch.hpp>

#include "server/egress/tls/tls_stream.h"
#include "tests/unit/egress_tls/https_test_server.h"
#include "tests/unit/egress_tls/tls_test_util.h"

using namespace lockroom::egress::tls;
using lockroom::testing::HttpsTestServer;

namespace {

std::unique_ptr<HttpsTestServer> start_server(HttpsTestServer::Options options = {}) {
  std::string error;
  auto server = HttpsTestServer::start(std::move(options), &error);
  INFO(error);
  REQUIRE(server);
  return server;
}

std::shared_ptr<TlsClientContext> client_context(std::vector<std::string> extra_ca_files) {
  TlsClientOptions options;
  options.extra_ca_files = std::move(extra_ca_files);
  auto context = TlsClientContext::create(options);
  REQUIRE(context.ok());
  return *context;
}

// Connects to the test server as `host`; returns the stream after the handshake ended either way.
std::unique_ptr<TlsStream> handshake(HttpsTestServer& server, const std::shared_ptr<TlsClientContext>& context,
                                     const std::string& host, int* fd_out) {
  auto stream = TlsStream::connect(context, host);
  REQUIRE(stream.ok());
  int fd = lockroom::testing::connect_loopback(server.port());
  REQUIRE(fd >= 0);
  *fd_out = fd;
  TlsStream& s = **stream;
  lockroom::testing::drive_over_socket(s, fd, [&] { return s.state() != TlsStream::State::kHandshaking; });
  return std::move(*stream);
}

// Sends a request and reads the response until the server closes.
std::string fetch(TlsStream& stream, int fd, const std::string& request) {
  REQUIRE(stream.write_plaintext(request).ok());
  std::string response;
  lockroom::testing::drive_over_socket(stream, fd, [&] {
    response += stream.read_plaintext();
    return stream.peer_closed();
  });
  return response + stream.read_plaintext();
}

}  // namespace

TEST_CASE("client stream fetches from an HTTPS server whose CA is given as an extra CA file", "[tls_stream][client]") {
  auto server = start_server();
  int fd = -1;
  auto stream = handshake(*server, client_context({server->ca_file()}), "localhost", &fd);
  INFO(stream->error());
  REQUIRE(stream->state() == TlsStream::State::kOpen);
  CHECK(stream->alpn().empty());  // the test server does not do ALPN

  std::string response = fetch(*stream, fd, "GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n");
  ::close(fd);
  CHECK(response == server->response());
  CHECK(server->last_sni() == "localhost");  // read after the answer: the server has finished with it
  CHECK(server->last_request().rfind("GET /hello HTTP/1.1\r\n", 0) == 0);
}

TEST_CASE("client stream verifies an IP address against the certificate's iPAddress", "[tls_stream][client]") {
  auto server = start_server();
  int fd = -1;
  auto stream = handshake(*server, client_context({server->ca_file()}), "127.0.0.1", &fd);
  INFO(stream->error());
  REQUIRE(stream->state() == TlsStream::State::kOpen);
  CHECK(fetch(*stream, fd, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n") == server->response());
  ::close(fd);
  CHECK(server->requests() == 1);
  CHECK(server->last_sni().empty());  // no SNI for an IP literal
}

TEST_CASE("client stream refuses a certificate for another host name", "[tls_stream][client]") {
  auto server = start_server();
  int fd = -1;
  auto stream = handshake(*server, client_context({server->ca_file()}), "wrong.example.test", &fd);
  ::close(fd);
  CHECK(stream->state() == TlsStream::State::kFailed);
  CHECK(stream->error() ==
        "TLS handshake with upstream wrong.example.test failed: certificate verify failed: hostname mismatch "
        "(the certificate is not for wrong.example.test)");
  CHECK(server->handshakes() == 0);
}

TEST_CASE("client stream refuses a server whose CA it does not trust", "[tls_stream][client]") {
  auto server = start_server();
  int fd = -1;
  auto stream = handshake(*server, client_context({}), "localhost", &fd);
  ::close(fd);
  CHECK(stream->state() == TlsStream::State::kFailed);
  CHECK(stream->error() ==
        "TLS handshake with upstream localhost failed: certificate verify failed: unable to get local issuer certificate");
}

TEST_CASE("client stream refuses an expired certificate", "[tls_stream][client]") {
  HttpsTestServer::Options options;
  options.expired = true;
  auto server = start_server(options);
  int fd = -1;
  auto stream = handshake(*server, client_context({server->ca_file()}), "localhost", &fd);
  ::close(fd);
  CHECK(stream->state() == TlsStream::State::kFailed);
  CHECK(stream->error() == "TLS handshake with upstream localhost failed: certificate verify failed: certificate has expired");
}

TEST_CASE("client context names a CA file it cannot load", "[tls_stream][client]") {
  TlsClientOptions options;
  options.extra_ca_files = {"/nonexistent/lockroom-test-ca.pem"};
  auto context = TlsClientContext::create(options);
  REQUIRE_FALSE(context.ok());
  CHECK(context.error().message.find("cannot load CA certificates from '/nonexistent/lockroom-test-ca.pem'") == 0);
}

TEST_CASE("client stream refuses a host that is not a host name", "[tls_stream][client]") {
  auto stream = TlsStream::connect(client_context({}), "evil host\r\n");
  REQUIRE_FALSE(stream.ok());
  CHECK(stream.error().code == lockroom::ErrorCode::kInvalidInput);
}

TEST_CASE("client stream holds what is written before the handshake and sends it after", "[tls_stream][client]") {
  auto server = start_server();
  auto stream = TlsStream::connect(client_context({server->ca_file()}), "localhost");
  REQUIRE(stream.ok());
  TlsStream& s = **stream;
  REQUIRE(s.write_plaintext("GET /early HTTP/1.1\r\nHost: localhost\r\n\r\n").ok());
  CHECK(s.state() == TlsStream::State::kHandshaking);
  int fd = lockroom::testing::connect_loopback(server->port());
  REQUIRE(fd >= 0);
  std::string response;
  lockroom::testing::drive_over_socket(s, fd, [&] {
    response += s.read_plaintext();
    return s.peer_closed();
  });
  ::close(fd);
  CHECK(response == server->response());
  CHECK(server->last_request().rfind("GET /early ", 0) == 0);
}
