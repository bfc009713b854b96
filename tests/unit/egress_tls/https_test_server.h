// HttpsTestServer: a loopback HTTPS server for tests, with its own CA made in-process.
//
// Listens on 127.0.0.1 (a free port) and serves each connection on its own thread, one after
// another: TLS handshake, read one request head, answer a fixed HTTP/1.1 response, close_notify,
// close. Its certificate is a leaf of a test SandboxCa for `names` (host names and IP literals);
// `expired` makes a leaf that expired an hour ago. ca_file() is that CA as a PEM file in a temp
// directory the server removes when it goes away, for TlsClientOptions::extra_ca_files.
// Used by the egress TLS tests and by the proxy engine's tests. Counters are safe to read from
// any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace lockroom::testing {

class HttpsTestServer {
 public:
  struct Options {
    std::vector<std::string> names = {"localhost", "127.0.0.1"};
    bool expired = false;
    std::string body = "hello from the test server\n";
  };

  // Null (with the reason in *error) if it could not start.
  static std::unique_ptr<HttpsTestServer> start(Options options, std::string* error = nullptr);
  static std::unique_ptr<HttpsTestServer> start() { return start(Options{}); }
  ~HttpsTestServer();
  HttpsTestServer(const HttpsTestServer&) = delete;
  HttpsTestServer& operator=(const HttpsTestServer&) = delete;

  std::uint16_t port() const { return port_; }
  const std::string& ca_file() const { return ca_file_; }
  const std::string& ca_pem() const { return ca_pem_; }
  std::string response() const;  // the exact bytes every request is answered with

  int connections() const { return connections_; }         // accepted TCP connections
  int handshakes() const { return handshakes_; }           // completed TLS handshakes
  int requests() const { return requests_; }               // answered requests
  std::string last_request() const;                        // the last request head received
  std::string last_sni() const;

 private:
  struct Impl;
  HttpsTestServer() = default;
  void serve();
  void serve_one(int fd);

  std::unique_ptr<Impl> impl_;
  std::uint16_t port_ = 0;
  std::string dir_;
  std::string ca_file_;
  std::string ca_pem_;
  std::string body_;
  int listen_fd_ = -1;
  int wake_fds_[2] = {-1, -1};
  std::thread thread_;
  std::atomic<int> connections_{0};
  std::atomic<int> handshakes_{0};
  std::atomic<int> requests_{0};
  mutable std::mutex mutex_;
  std::string last_request_;
  std::string last_sni_;
};

}  // namespace lockroom::testing
