// HttpsTestServer; see https_test_server.h. (Named test_support_* so the suite's glob builds it.)
#include "tests/unit/egress_tls/https_test_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>

#include <openssl/err.h>

#include "server/egress/tls/leaf_certs.h"
#include "server/egress/tls/sandbox_ca.h"

namespace lockroom::testing {

using namespace lockroom::egress::tls;

struct HttpsTestServer::Impl {
  SslCtxPtr ctx;
};

namespace {

constexpr std::size_t kMaxRequestHead = 64u << 10;

std::unique_ptr<HttpsTestServer> fail(std::string* error, std::string why) {
  if (error) *error = std::move(why);
  return nullptr;
}

}  // namespace

std::unique_ptr<HttpsTestServer> HttpsTestServer::start(Options options, std::string* error) {
  std::unique_ptr<HttpsTestServer> server(new HttpsTestServer());
  server->impl_ = std::make_unique<Impl>();
  server->body_ = options.body;

  auto ca = SandboxCa::create("https-test-server", CaValidity{std::chrono::hours(3), std::chrono::hours(24)});
  if (!ca) return fail(error, ca.error().message);
  EvpPkeyPtr key = generate_p256_key();
  if (options.names.empty()) return fail(error, "the test server needs at least one name");
  std::time_t now = std::time(nullptr);
  std::time_t not_before = options.expired ? now - 2 * 3600 : ca->not_before();
  std::time_t not_after = options.expired ? now - 3600 : ca->not_after();
  auto leaf = mint_leaf(ca->certificate(), ca->key(), key.get(), options.names, not_before, not_after);
  if (!leaf) return fail(error, leaf.error().message);

  server->impl_->ctx.reset(SSL_CTX_new(TLS_server_method()));
  SSL_CTX* ctx = server->impl_->ctx.get();
  if (!ctx || SSL_CTX_use_certificate(ctx, leaf->cert.get()) != 1 || SSL_CTX_use_PrivateKey(ctx, key.get()) != 1)
    return fail(error, "cannot set up the test server's TLS: " + take_openssl_errors());

  server->ca_pem_ = ca->certificate_pem();
  std::string tmpl = (std::filesystem::temp_directory_path() / "lockroom-https-test-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) return fail(error, "cannot make a temp directory for the test CA");
  server->dir_ = tmpl;
  server->ca_file_ = tmpl + "/ca.pem";
  std::ofstream(server->ca_file_) << server->ca_pem_;

  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || listen(fd, 16) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    if (fd >= 0) ::close(fd);
    return fail(error, "cannot listen on loopback for the test server");
  }
  server->listen_fd_ = fd;
  server->port_ = ntohs(address.sin_port);
  if (pipe2(server->wake_fds_, O_CLOEXEC) != 0) return fail(error, "cannot make the test server's wake pipe");
  signal(SIGPIPE, SIG_IGN);  // a client that hangs up mid-write must not kill the test binary
  server->thread_ = std::thread([s = server.get()] { s->serve(); });
  return server;
}

HttpsTestServer::~HttpsTestServer() {
  if (thread_.joinable()) {
    char byte = 0;
    [[maybe_unused]] ssize_t n = write(wake_fds_[1], &byte, 1);
    thread_.join();
  }
  for (int fd : {listen_fd_, wake_fds_[0], wake_fds_[1]})
    if (fd >= 0) ::close(fd);
  if (!dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
}

std::string HttpsTestServer::response() const {
  return "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(body_.size()) +
         "\r\nConnection: close\r\n\r\n" + body_;
}

std::string HttpsTestServer::last_request() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_request_;
}

std::string HttpsTestServer::last_sni() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_sni_;
}

void HttpsTestServer::serve() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fds_[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents) return;
    if (!(fds[0].revents & POLLIN)) continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    ++connections_;
    serve_one(fd);
    ::close(fd);
  }
}

void HttpsTestServer::serve_one(int fd) {
  timeval limit{5, 0};  // a stuck client cannot hold the server (or the test) for long
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
  SslPtr ssl(SSL_new(impl_->ctx.get()));
  SSL_set_fd(ssl.get(), fd);
  if (SSL_accept(ssl.get()) != 1) {
    ERR_clear_error();
    return;
  }
  ++handshakes_;
  {
    const char* sni = SSL_get_servername(ssl.get(), TLSEXT_NAMETYPE_host_name);
    std::lock_guard<std::mutex> lock(mutex_);
    last_sni_ = sni ? sni : "";
  }
  std::string head;
  char chunk[4096];
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < kMaxRequestHead) {
    int got = SSL_read(ssl.get(), chunk, sizeof chunk);
    if (got <= 0) break;
    head.append(chunk, static_cast<std::size_t>(got));
  }
  if (head.find("\r\n\r\n") == std::string::npos) {
    ERR_clear_error();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    last_request_ = head;
  }
  std::string answer = response();
  if (SSL_write(ssl.get(), answer.data(), static_cast<int>(answer.size())) == static_cast<int>(answer.size())) ++requests_;
  SSL_shutdown(ssl.get());
  ERR_clear_error();
}

}  // namespace lockroom::testing
