// BenchHttpServer; see bench_http_server.h.
#include "bench/egress/bench_http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>

namespace lockroom::bench {

namespace {

constexpr std::size_t kMaxHead = 16 * 1024;
constexpr std::string_view kSmallBody = "hello, guest\n";

bool send_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

const std::string& big_block() {
  static const std::string block(1u << 20, 'x');
  return block;
}

bool wants_close(std::string head) {
  std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return head.find("\r\nconnection: close") != std::string::npos || head.find(" http/1.0\r\n") != std::string::npos;
}

}  // namespace

std::unique_ptr<BenchHttpServer> BenchHttpServer::start(std::string& error) {
  std::unique_ptr<BenchHttpServer> server(new BenchHttpServer());
  signal(SIGPIPE, SIG_IGN);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || listen(fd, 128) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0 || pipe2(server->wake_fds_, O_CLOEXEC) != 0) {
    error = std::string("cannot listen on 127.0.0.1: ") + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return nullptr;
  }
  server->listen_fd_ = fd;
  server->port_ = ntohs(address.sin_port);
  server->acceptor_ = std::thread([s = server.get()] { s->accept_loop(); });
  return server;
}

BenchHttpServer::~BenchHttpServer() {
  char byte = 0;
  [[maybe_unused]] ssize_t n = ::write(wake_fds_[1], &byte, 1);
  if (acceptor_.joinable()) acceptor_.join();
  std::unique_lock<std::mutex> lock(mutex_);
  for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
  all_done_.wait(lock, [this] { return workers_ == 0; });
  for (int fd : {listen_fd_, wake_fds_[0], wake_fds_[1]})
    if (fd >= 0) ::close(fd);
}

void BenchHttpServer::accept_loop() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fds_[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents) return;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard<std::mutex> lock(mutex_);
    open_fds_.push_back(fd);
    ++workers_;
    std::thread([this, fd] {
      serve(fd);
      std::lock_guard<std::mutex> done(mutex_);
      open_fds_.erase(std::find(open_fds_.begin(), open_fds_.end(), fd));
      ::close(fd);
      if (--workers_ == 0) all_done_.notify_all();
    }).detach();
  }
}

void BenchHttpServer::serve(int fd) {
  std::string buffer;
  char chunk[4096];
  while (true) {
    std::size_t end;
    while ((end = buffer.find("\r\n\r\n")) == std::string::npos) {
      if (buffer.size() > kMaxHead) return;
      ssize_t got = ::recv(fd, chunk, sizeof chunk, 0);
      if (got <= 0) return;
      buffer.append(chunk, static_cast<std::size_t>(got));
    }
    std::string head = buffer.substr(0, end + 4);
    buffer.erase(0, end + 4);
    ++requests_;
    std::size_t method_end = head.find(' ');
    std::size_t path_end = method_end == std::string::npos ? std::string::npos : head.find(' ', method_end + 1);
    std::string path = path_end == std::string::npos ? "" : head.substr(method_end + 1, path_end - method_end - 1);
    if (auto scheme = path.find("://"); scheme != std::string::npos) path.erase(0, path.find('/', scheme + 3));
    bool close_after = wants_close(head);
    std::string connection = close_after ? "Connection: close\r\n" : "";
    if (path == "/small") {
      std::string answer = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(kSmallBody.size()) +
                           "\r\n" + connection + "\r\n" + std::string(kSmallBody);
      if (!send_all(fd, answer.data(), answer.size())) return;
    } else if (path.rfind("/big/", 0) == 0 && path.size() > 5 && path.size() < 16 &&
               path.find_first_not_of("0123456789", 5) == std::string::npos) {
      std::size_t size = std::stoull(path.substr(5));
      std::string answer = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: " +
                           std::to_string(size) + "\r\n" + connection + "\r\n";
      if (!send_all(fd, answer.data(), answer.size())) return;
      const std::string& block = big_block();
      for (std::size_t sent = 0; sent < size;) {
        std::size_t piece = std::min(block.size(), size - sent);
        if (!send_all(fd, block.data(), piece)) return;
        sent += piece;
      }
    } else {
      std::string answer = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n" + connection + "\r\n";
      if (!send_all(fd, answer.data(), answer.size())) return;
    }
    if (close_after) {
      ::shutdown(fd, SHUT_WR);
      return;
    }
  }
}

}  // namespace lockroom::bench
