// Helpers for the TLS tests: a plain OpenSSL client over memory BIOs (the "guest's client"
// that trusts only the sandbox CA), byte shuttling between it and a TlsStream, and a driver that
// runs a TlsStream over a blocking loopback socket.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "server/egress/tls/openssl_util.h"
#include "server/egress/tls/tls_stream.h"

namespace lockroom::testing {

using egress::tls::TlsStream;

// An OpenSSL client that trusts exactly `trusted` and checks the server for `verify_name`.
class MemoryTlsClient {
 public:
  MemoryTlsClient(X509* trusted, const std::string& sni, const std::string& verify_name,
                  std::vector<unsigned char> alpn = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'}) {
    ctx_.reset(SSL_CTX_new(TLS_client_method()));
    X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx_.get()), trusted);
    SSL_CTX_set_verify(ctx_.get(), SSL_VERIFY_PEER, nullptr);
    ssl_.reset(SSL_new(ctx_.get()));
    in_ = BIO_new(BIO_s_mem());
    out_ = BIO_new(BIO_s_mem());
    BIO_set_mem_eof_return(in_, -1);
    SSL_set_bio(ssl_.get(), in_, out_);
    if (!sni.empty()) SSL_set_tlsext_host_name(ssl_.get(), sni.c_str());
    if (egress::tls::parse_ip_literal(verify_name)) {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_.get()), verify_name.c_str());
    } else {
      SSL_set1_host(ssl_.get(), verify_name.c_str());
    }
    if (!alpn.empty()) SSL_set_alpn_protos(ssl_.get(), alpn.data(), static_cast<unsigned>(alpn.size()));
    SSL_set_connect_state(ssl_.get());
  }

  SSL* ssl() { return ssl_.get(); }
  // Steps the handshake; 1 done, 0 in progress, -1 failed.
  int step() {
    int rc = SSL_do_handshake(ssl_.get());
    if (rc == 1) return 1;
    int e = SSL_get_error(ssl_.get(), rc);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return 0;
    ERR_clear_error();
    return -1;
  }
  std::string take() {
    std::string bytes(BIO_ctrl_pending(out_), '\0');
    if (!bytes.empty()) BIO_read(out_, bytes.data(), static_cast<int>(bytes.size()));
    return bytes;
  }
  void give(const std::string& bytes) {
    if (!bytes.empty()) BIO_write(in_, bytes.data(), static_cast<int>(bytes.size()));
  }
  void write(const std::string& text) { SSL_write(ssl_.get(), text.data(), static_cast<int>(text.size())); }
  // Everything readable now; *closed set when close_notify arrived.
  std::string read(bool* closed = nullptr) {
    std::string text;
    char chunk[16384];
    while (true) {
      int got = SSL_read(ssl_.get(), chunk, sizeof chunk);
      if (got > 0) {
        text.append(chunk, static_cast<std::size_t>(got));
        continue;
      }
      if (closed) *closed = SSL_get_error(ssl_.get(), got) == SSL_ERROR_ZERO_RETURN;
      ERR_clear_error();
      return text;
    }
  }
  std::string alpn() {
    const unsigned char* data = nullptr;
    unsigned int size = 0;
    SSL_get0_alpn_selected(ssl_.get(), &data, &size);
    return std::string(reinterpret_cast<const char*>(data), data ? size : 0);
  }

 private:
  egress::tls::SslCtxPtr ctx_;
  egress::tls::SslPtr ssl_;
  BIO* in_ = nullptr;
  BIO* out_ = nullptr;
};

// Runs the handshake between `client` and `server` in memory; the client's final result.
inline int handshake_in_memory(MemoryTlsClient& client, TlsStream& server) {
  int result = 0;
  for (int round = 0; round < 20; ++round) {
    result = client.step();
    std::string to_server = client.take();
    if (!to_server.empty()) (void)server.feed_ciphertext(to_server);
    client.give(server.take_ciphertext());
    if (result != 0 && server.state() != TlsStream::State::kHandshaking) break;
    if (result == -1 || server.state() == TlsStream::State::kFailed) {
      client.give(server.take_ciphertext());
      if (result == 0) result = client.step();
      break;
    }
  }
  return result;
}

// Both directions once: client → server, server → client.
inline void shuttle(MemoryTlsClient& client, TlsStream& server) {
  std::string to_server = client.take();
  if (!to_server.empty()) (void)server.feed_ciphertext(to_server);
  client.give(server.take_ciphertext());
}

inline int connect_loopback(std::uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  timeval limit{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  return fd;
}

// Moves bytes between `stream` and a blocking socket until `done()` or the stream fails or the
// socket ends. Sends any alert a failure produced.
inline void drive_over_socket(TlsStream& stream, int fd, const std::function<bool()>& done) {
  for (int round = 0; round < 1000; ++round) {
    std::string out = stream.take_ciphertext();
    if (!out.empty() && send(fd, out.data(), out.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(out.size())) return;
    if (done() || stream.state() == TlsStream::State::kFailed) return;
    char chunk[16384];
    ssize_t got = recv(fd, chunk, sizeof chunk, 0);
    if (got <= 0) return;
    (void)stream.feed_ciphertext(std::string_view(chunk, static_cast<std::size_t>(got)));
  }
}

}  // namespace lockroom::testing
