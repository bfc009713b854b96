// BenchHttpServer: the upstream of the egress benchmark, a small HTTP/1.1 server on 127.0.0.1.
//
// Blocking sockets, one thread per connection, keep-alive. `GET /small` answers a 13-byte body;
// `GET /big/<n>` answers n bytes, sent from one static 1 MiB buffer so the server costs the same
// whichever client reads it (direct, through the host proxy, or from a guest). Anything else is
// 404. Requests are GETs without a body (the benchmark's clients send nothing else). The
// destructor ends every connection and waits for every connection thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace lockroom::bench {

class BenchHttpServer {
 public:
  // Listens on 127.0.0.1 with a port the kernel picks; null (and `error` set) on failure.
  static std::unique_ptr<BenchHttpServer> start(std::string& error);
  ~BenchHttpServer();
  BenchHttpServer(const BenchHttpServer&) = delete;
  BenchHttpServer& operator=(const BenchHttpServer&) = delete;

  std::uint16_t port() const { return port_; }
  int requests() const { return requests_; }

 private:
  BenchHttpServer() = default;
  void accept_loop();
  void serve(int fd);

  int listen_fd_ = -1;
  int wake_fds_[2] = {-1, -1};
  std::uint16_t port_ = 0;
  std::thread acceptor_;
  std::mutex mutex_;
  std::condition_variable all_done_;
  int workers_ = 0;             // detached connection threads still running
  std::vector<int> open_fds_;   // their sockets, shut down by the destructor
  std::atomic<int> requests_{0};
};

}  // namespace lockroom::bench
