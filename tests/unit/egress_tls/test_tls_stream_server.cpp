// TlsStream in the server role (toward the guest): a plain OpenSSL client that trusts only the
// sandbox CA handshakes with it in memory, as the guest's tools would through the proxy.
#include <catch2/catch.hpp>

#include "server/egress/tls/tls_stream.h"
#include "tests/unit/egress_tls/tls_test_util.h"

using namespace lockroom::egress::tls;
using lockroom::testing::MemoryTlsClient;

namespace {

struct Sandbox {
  Sandbox() {
    auto made = SandboxCa::create("sb-mitm");
    REQUIRE(made.ok());
    ca = std::make_unique<SandboxCa>(std::move(*made));
    auto leaves = LeafCerts::create(*ca);
    REQUIRE(leaves.ok());
    auto made_context = TlsServerContext::create(std::move(*leaves));
    REQUIRE(made_context.ok());
    context = *made_context;
  }
  std::unique_ptr<TlsStream> accept(std::string fallback = "connect-target.test", TlsStream::NameCheck check = {},
                                    TlsStream::Limits limits = {}) {
    auto stream = TlsStream::accept(context, std::move(fallback), std::move(check), limits);
    REQUIRE(stream.ok());
    return std::move(*stream);
  }
  std::unique_ptr<SandboxCa> ca;
  std::shared_ptr<TlsServerContext> context;
};

}  // namespace

TEST_CASE("guest client trusting only the sandbox CA completes a MITM round trip", "[tls_stream][server]") {
  Sandbox sandbox;
  auto server = sandbox.accept();
  MemoryTlsClient client(sandbox.ca->certificate(), "api.example.test", "api.example.test",
                         {2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'});

  REQUIRE(lockroom::testing::handshake_in_memory(client, *server) == 1);
  CHECK(SSL_get_verify_result(client.ssl()) == X509_V_OK);
  CHECK(server->state() == TlsStream::State::kOpen);
  CHECK(server->handshake_done());
  CHECK(server->peer_name() == "api.example.test");
  CHECK(server->client_sent_sni());
  CHECK(server->alpn() == "http/1.1");  // h2 was offered first, only http/1.1 is accepted
  CHECK(client.alpn() == "http/1.1");
  CHECK(server->protocol_version() == "TLSv1.3");

  std::string request = "GET /v1/models HTTP/1.1\r\nHost: api.example.test\r\nAuthorization: Bearer SENTINEL\r\n\r\n";
  client.write(request);
  lockroom::testing::shuttle(client, *server);
  CHECK(server->read_plaintext() == request);
  CHECK(server->plaintext_available() == 0);

  std::string response = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
  REQUIRE(server->write_plaintext(response).ok());
  lockroom::testing::shuttle(client, *server);
  CHECK(client.read() == response);

  server->close();
  lockroom::testing::shuttle(client, *server);
  bool closed = false;
  CHECK(client.read(&closed).empty());
  CHECK(closed);
  CHECK(server->state() == TlsStream::State::kClosed);
  CHECK_FALSE(server->write_plaintext("late").ok());
}

TEST_CASE("guest client closing is seen as peer_closed", "[tls_stream][server]") {
  Sandbox sandbox;
  auto server = sandbox.accept();
  MemoryTlsClient client(sandbox.ca->certificate(), "api.example.test", "api.example.test");
  REQUIRE(lockroom::testing::handshake_in_memory(client, *server) == 1);
  client.write("last words");
  SSL_shutdown(client.ssl());
  lockroom::testing::shuttle(client, *server);
  CHECK(server->read_plaintext() == "last words");
  CHECK(server->peer_closed());
  CHECK_FALSE(server->wants_ciphertext());
}

TEST_CASE("a client without SNI gets a certificate for the CONNECT target", "[tls_stream][server]") {
  Sandbox sandbox;
  auto server = sandbox.accept("192.0.2.10");
  MemoryTlsClient client(sandbox.ca->certificate(), "", "192.0.2.10");
  REQUIRE(lockroom::testing::handshake_in_memory(client, *server) == 1);
  CHECK(server->peer_name() == "192.0.2.10");
  CHECK_FALSE(server->client_sent_sni());
}

TEST_CASE("a name the check refuses fails the handshake with the check's reason", "[tls_stream][server]") {
  Sandbox sandbox;
  std::string checked;
  auto server = sandbox.accept("connect-target.test", [&](const std::string& name) -> lockroom::Result<void> {
    checked = name;
    return lockroom::make_error(lockroom::ErrorCode::kInvalidInput, "SNI " + name + " does not match the CONNECT host");
  });
  MemoryTlsClient client(sandbox.ca->certificate(), "Other.Example.Test", "other.example.test");
  CHECK(lockroom::testing::handshake_in_memory(client, *server) == -1);
  CHECK(checked == "other.example.test");
  CHECK(server->state() == TlsStream::State::kFailed);
  CHECK(server->error() ==
        "TLS handshake with the guest's client failed: SNI other.example.test does not match the CONNECT host");
  CHECK_FALSE(server->feed_ciphertext("more").ok());
}

TEST_CASE("a client that does not trust the sandbox CA fails with the alert it sent", "[tls_stream][server]") {
  Sandbox sandbox;
  auto stranger = SandboxCa::create("someone-else");
  REQUIRE(stranger.ok());
  auto server = sandbox.accept();
  MemoryTlsClient client(stranger->certificate(), "api.example.test", "api.example.test");
  CHECK(lockroom::testing::handshake_in_memory(client, *server) == -1);
  CHECK(server->state() == TlsStream::State::kFailed);
  CHECK(server->error() == "TLS handshake with the guest's client for api.example.test failed: received alert: unknown CA");
}

TEST_CASE("plain HTTP sent to the TLS server fails clearly", "[tls_stream][server]") {
  Sandbox sandbox;
  auto server = sandbox.accept();
  auto fed = server->feed_ciphertext("GET / HTTP/1.1\r\nHost: api.example.test\r\n\r\n");
  REQUIRE_FALSE(fed.ok());
  CHECK(fed.error().message == server->error());
  CHECK(server->error().find("TLS handshake with the guest's client failed: ") == 0);
  CHECK(server->error().find("http request") != std::string::npos);
}

TEST_CASE("a hostile SNI is refused before anything is signed", "[tls_stream][server]") {
  Sandbox sandbox;
  auto server = sandbox.accept();
  MemoryTlsClient client(sandbox.ca->certificate(), "bad_name-.test", "bad_name-.test");
  CHECK(lockroom::testing::handshake_in_memory(client, *server) == -1);
  CHECK(server->error().find("'bad_name-.test' is not a host name or IP address") != std::string::npos);
  CHECK(sandbox.context->leaves().mint_count() == 0);
}

TEST_CASE("server stream buffers are bounded and the reader is told to pause", "[tls_stream][server]") {
  Sandbox sandbox;
  TlsStream::Limits limits;
  limits.buffered = 32u << 10;
  auto server = sandbox.accept("connect-target.test", {}, limits);
  MemoryTlsClient client(sandbox.ca->certificate(), "api.example.test", "api.example.test");
  REQUIRE(lockroom::testing::handshake_in_memory(client, *server) == 1);

  std::string block(16u << 10, 'x');
  std::string sent;
  lockroom::Result<void> fed;
  while (sent.size() < (1u << 20)) {
    client.write(block);
    sent += block;
    fed = server->feed_ciphertext(client.take());
    if (!fed.ok()) break;
  }
  REQUIRE_FALSE(fed.ok());
  CHECK(fed.error().code == lockroom::ErrorCode::kLimitExceeded);
  CHECK(server->plaintext_available() <= limits.buffered);
  CHECK_FALSE(server->wants_ciphertext());

  // Draining lets it decrypt what was accepted before the refusal; the stream is not broken.
  std::string received;
  while (server->plaintext_available() > 0) received += server->read_plaintext(8192);
  CHECK(server->state() == TlsStream::State::kOpen);
  CHECK(received.size() >= 4 * limits.buffered - 2 * block.size());
  CHECK(received == sent.substr(0, received.size()));
  CHECK(server->wants_ciphertext());
}

TEST_CASE("a server stream closed before its handshake does not go on handshaking", "[tls_stream][server]") {
  Sandbox sandbox;
  auto server = sandbox.accept();
  MemoryTlsClient client(sandbox.ca->certificate(), "api.example.test", "api.example.test");
  server->close();
  CHECK(server->state() == TlsStream::State::kClosed);
  CHECK(client.step() == 0);
  CHECK(server->feed_ciphertext(client.take()).ok());
  CHECK(server->take_ciphertext().empty());  // no ServerHello
  CHECK_FALSE(server->handshake_done());
  CHECK(sandbox.context->leaves().mint_count() == 0);
}
