// Test support for the proxy engine; see engine_test_support.h. (Named test_support_* so the
// suite's glob builds it.)
#include "tests/unit/egress_engine/engine_test_support.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "server/egress/engine/uv_client_stream.h"
#include "server/egress/policy/http_head.h"
#include "server/egress/policy/policy_json.h"

namespace lockroom::testing {

using namespace lockroom::egress;
using namespace lockroom::egress::tls;

// --- HttpTestServer -----------------------------------------------------------------------------

std::unique_ptr<HttpTestServer> HttpTestServer::start() {
  std::unique_ptr<HttpTestServer> server(new HttpTestServer());
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || listen(fd, 64) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0 || pipe2(server->wake_fds_, O_CLOEXEC) != 0) {
    if (fd >= 0) ::close(fd);
    return nullptr;
  }
  signal(SIGPIPE, SIG_IGN);
  server->listen_fd_ = fd;
  server->port_ = ntohs(address.sin_port);
  server->thread_ = std::thread([s = server.get()] { s->serve(); });
  return server;
}

HttpTestServer::~HttpTestServer() {
  char byte = 0;
  [[maybe_unused]] ssize_t n = write(wake_fds_[1], &byte, 1);
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
  }
  for (auto& worker : workers_) worker.join();
  for (int fd : {listen_fd_, wake_fds_[0], wake_fds_[1]})
    if (fd >= 0) ::close(fd);
}

std::vector<std::string> HttpTestServer::received() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return received_;
}

void HttpTestServer::serve() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fds_[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents) return;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    ++connections_;
    std::lock_guard<std::mutex> lock(mutex_);
    open_fds_.push_back(fd);
    workers_.emplace_back([this, fd] { serve_one(fd); });
  }
}

namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// Test-side reading of a request's Content-Length (the proxy itself uses http-parser).
std::size_t content_length_of(const std::string& head) {
  std::string text = lower(head);
  auto at = text.find("\r\ncontent-length:");
  return at == std::string::npos ? 0 : std::stoul(text.substr(at + 17));
}

}  // namespace

void HttpTestServer::serve_one(int fd) {
  std::string buffer;
  char chunk[65536];
  while (true) {
    std::size_t end;
    while ((end = buffer.find("\r\n\r\n")) == std::string::npos) {
      ssize_t got = recv(fd, chunk, sizeof chunk, 0);
      if (got <= 0) return;
      buffer.append(chunk, static_cast<std::size_t>(got));
    }
    std::string head = buffer.substr(0, end + 4);
    std::size_t body_length = content_length_of(head);
    while (buffer.size() < end + 4 + body_length) {
      ssize_t got = recv(fd, chunk, sizeof chunk, 0);
      if (got <= 0) return;
      buffer.append(chunk, static_cast<std::size_t>(got));
    }
    std::string body = buffer.substr(end + 4, body_length);
    buffer.erase(0, end + 4 + body_length);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      received_.push_back(head + body);
    }
    ++requests_;
    std::string method = head.substr(0, head.find(' '));
    std::string path = head.substr(method.size() + 1, head.find(' ', method.size() + 1) - method.size() - 1);
    bool close_after = lower(head).find("\r\nconnection: close") != std::string::npos;
    if (path.rfind("/big/", 0) == 0) {
      std::size_t size = std::stoul(path.substr(5));
      std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(size) + "\r\n\r\n";
      if (!send_all(fd, answer)) return;
      std::string block(64u << 10, 'x');
      for (std::size_t sent = 0; sent < size; sent += block.size())
        if (!send_all(fd, block.substr(0, std::min(block.size(), size - sent)))) return;
    } else {
      std::string text = "hello " + method + " " + path + "\n";
      std::string answer = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(text.size()) +
                           (close_after ? "\r\nConnection: close" : "") + "\r\n\r\n" + text;
      if (!send_all(fd, answer)) return;
    }
    if (close_after) {
      ::shutdown(fd, SHUT_WR);
      return;
    }
  }
}

// --- blocking clients ---------------------------------------------------------------------------

bool send_all(int fd, const std::string& bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

void set_socket_timeouts(int fd, int seconds) {
  timeval limit{seconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
}

ReadFn socket_reader(int fd) {
  return [fd](char* buffer, std::size_t size) -> long { return recv(fd, buffer, size, 0); };
}

HttpAnswer read_answer(const ReadFn& read, const std::string& method, int slow_reader_us) {
  HttpAnswer answer;
  ResponseHeadParser parser(method);
  bool head_done = false;
  char chunk[16384];
  auto collect = [&](std::string_view body) { answer.body.append(body); };
  while (true) {
    if (slow_reader_us) usleep(static_cast<useconds_t>(slow_reader_us));
    long got = read(chunk, sizeof chunk);
    if (got <= 0) {
      if (head_done && parser.finish_body(collect).state == ParseState::kComplete) return answer;
      answer.error = head_done ? "the answer's body was cut short" : "no answer (connection closed or timed out)";
      return answer;
    }
    std::string_view bytes(chunk, static_cast<std::size_t>(got));
    if (!head_done) {
      FeedResult fed = parser.feed(bytes);
      answer.head.append(bytes.substr(0, fed.consumed));
      if (fed.state == ParseState::kError) {
        answer.error = parser.error().message;
        return answer;
      }
      if (fed.state == ParseState::kNeedMore) continue;
      head_done = true;
      answer.status = parser.head().status;
      bytes.remove_prefix(fed.consumed);
      if (parser.head().body == BodyFraming::kNone) return answer;
    }
    FeedResult fed = parser.feed_body(bytes, collect);
    if (fed.state == ParseState::kComplete) return answer;
    if (fed.state == ParseState::kError) {
      answer.error = parser.error().message;
      return answer;
    }
  }
}

TlsTestClient::TlsTestClient(const std::string& ca_pem, int fd, const std::string& sni) : sni_(sni) {
  ctx_.reset(SSL_CTX_new(TLS_client_method()));
  BioPtr bio(BIO_new_mem_buf(ca_pem.data(), static_cast<int>(ca_pem.size())));
  X509Ptr ca(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx_.get()), ca.get());
  SSL_CTX_set_verify(ctx_.get(), SSL_VERIFY_PEER, nullptr);
  ssl_.reset(SSL_new(ctx_.get()));
  SSL_set_fd(ssl_.get(), fd);
  SSL_set_tlsext_host_name(ssl_.get(), sni.c_str());
  SSL_set1_host(ssl_.get(), sni.c_str());
}

bool TlsTestClient::handshake() {
  if (SSL_connect(ssl_.get()) == 1) return true;
  long verify = SSL_get_verify_result(ssl_.get());
  error_ = verify != X509_V_OK ? X509_verify_cert_error_string(verify) : take_openssl_errors("the connection closed");
  return false;
}

ReadFn TlsTestClient::reader() {
  return [this](char* buffer, std::size_t size) -> long {
    int got = SSL_read(ssl_.get(), buffer, static_cast<int>(size));
    if (got <= 0) ERR_clear_error();
    return got;
  };
}

WriteFn TlsTestClient::writer() {
  return [this](const std::string& bytes) {
    return SSL_write(ssl_.get(), bytes.data(), static_cast<int>(bytes.size())) == static_cast<int>(bytes.size());
  };
}

// --- ProxyHarness -------------------------------------------------------------------------------

ProxyHarness::ProxyHarness(ProxyOptions options) : loop_(60000) {
  if (options.sandbox_id.empty()) options.sandbox_id = "sb-test";
  auto user_events = options.on_event;
  options.on_event = [this, user_events](const AuditRecord& record) {
    all_events.push_back(record);
    if (record.phase == "close") {
      AuditRecord decision = record;
      decision.phase.clear();  // as in the audit log
      events.push_back(std::move(decision));
    }
    if (user_events) user_events(record);
  };
  auto proxy = Proxy::create(loop_.get(), std::move(options));
  if (!proxy) FAIL(proxy.error().message);
  proxy_ = std::move(proxy.value());
}

ProxyHarness::~ProxyHarness() {
  if (proxy_ && !close_done) close_all();
}

void ProxyHarness::run_guest(int guest_fd, const std::function<void(int fd)>& guest, bool settle) {
  uv_async_t done;
  uv_async_init(loop_.get(), &done, [](uv_async_t* async) { uv_stop(async->loop); });
  std::thread thread([&] {
    set_socket_timeouts(guest_fd, 15);
    guest(guest_fd);
    ::close(guest_fd);
    uv_async_send(&done);
  });
  loop_.run();
  thread.join();
  uv_close(reinterpret_cast<uv_handle_t*>(&done), nullptr);
  loop_.run_once();
  if (settle) run_until([this] { return proxy_->stats().sessions == 0; }, std::chrono::seconds(2));
}

void ProxyHarness::run_http(const std::function<void(int fd)>& guest, bool settle, ConnectionOrigin origin) {
  run_guest(open_http(std::move(origin)), guest, settle);
}

int ProxyHarness::open_http(ConnectionOrigin origin) {
  FdPair pair = make_socketpair();
  REQUIRE(pair.read_end >= 0);
  auto stream = UvClientStream::open(loop_.get(), pair.read_end);
  REQUIRE(stream.ok());
  proxy_->accept_http(std::move(stream.value()), std::move(origin));
  return pair.write_end;
}

void ProxyHarness::run_socks(const std::string& host, std::uint16_t port, SocksOutcome& verdict,
                             const std::function<void(int fd)>& guest) {
  FdPair pair = make_socketpair();
  REQUIRE(pair.read_end >= 0);
  auto stream = UvClientStream::open(loop_.get(), pair.read_end);
  REQUIRE(stream.ok());
  proxy_->accept_socks(std::move(stream.value()), host, port, [&verdict](bool ok, int reply, std::string reason) {
    verdict.called = true;
    verdict.ok = ok;
    verdict.reply = reply;
    verdict.reason = std::move(reason);
  });
  run_guest(pair.write_end, guest, true);
}

void ProxyHarness::run_until(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    uv_run(loop_.get(), UV_RUN_NOWAIT);
    usleep(1000);
  }
}

int ProxyHarness::close_all() {
  proxy_->close([this] { close_done = true; });
  loop_.run();
  proxy_.reset();
  return loop_.finish();
}

Policy policy_from(const std::string& json_text) {
  auto policy = parse_policy(json::parse(json_text));
  if (!policy) FAIL(policy.error().message);
  return policy.value();
}

}  // namespace lockroom::testing
