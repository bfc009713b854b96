// One proxied TCP connection; see net_connection.h.
#include "guest/net_connection.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "guest/log.h"

namespace lockroom::agent {

namespace channel = protocol::channel;

namespace {
constexpr std::size_t kReadChunk = 64u << 10;
}  // namespace

NetConnection::NetConnection(Connection& channel, int fd, channel::NetKind kind, std::int64_t client_port)
    : channel_(channel), fd_(fd), kind_(kind), client_port_(client_port), state_(State::kHandshake) {}

NetConnection::~NetConnection() {
  if (stream_) channel_.release(stream_);
  close_socket(true);
}

void NetConnection::set_client_process(std::int64_t pid, std::string command, std::optional<std::int64_t> started) {
  client_pid_ = pid;
  client_command_ = std::move(command);
  client_started_ = started;
}

bool NetConnection::start() {
  if (kind_ == channel::NetKind::kSocks) return true;
  return announce(std::nullopt);
}

bool NetConnection::announce(std::optional<channel::NetTarget> target) {
  auto opened = channel_.open_stream(this);
  if (!opened) {
    log_warn("a guest program's proxy connection was refused: " + opened.error().message);
    close_socket(true);
    state_ = State::kDone;
    return false;
  }
  stream_ = *opened;
  channel::NetConnection note;
  note.stream = stream_;
  note.kind = kind_;
  note.target = std::move(target);
  note.client_port = client_port_;
  note.client_pid = client_pid_;
  note.client_command = client_command_;
  note.client_started = client_started_;
  channel_.send_message(protocol::encode_notification(channel::method::kNetConnection, channel::to_json(note)));
  state_ = kind_ == channel::NetKind::kSocks ? State::kVerdict : State::kRelay;
  return true;
}

void NetConnection::add_polls(PollSet& set) {
  if (fd_ < 0) return;
  short events = 0;
  if (state_ == State::kHandshake) events = POLLIN;
  if (state_ == State::kRelay) {
    if (!client_ended_ && !channel_.backlogged() && channel_.credit(stream_) > 0) events |= POLLIN;
    if (pending_out()) events |= POLLOUT;
  }
  if (!events) return;
  set.add(fd_, events, [this](short revents) {
    if (state_ == State::kHandshake) return read_handshake();
    if (revents & POLLOUT) write_client();
    if (state_ == State::kRelay && (revents & (POLLIN | POLLHUP | POLLERR)) && !client_ended_) read_client();
  });
}

void NetConnection::read_handshake() {
  char buf[SocksHandshake::kMaxBuffered];
  ssize_t n = ::read(fd_, buf, sizeof buf);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) {
    close_socket(n < 0);
    state_ = State::kDone;
    return;
  }
  auto outcome = socks_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
  if (!outcome.reply.empty() && !write_all(outcome.reply)) outcome.step = SocksHandshake::Step::kFail;
  if (outcome.step == SocksHandshake::Step::kFail) {
    if (!outcome.why.empty()) log_debug("SOCKS connection from port " + std::to_string(client_port_) + " refused: " + outcome.why);
    close_socket(false);
    state_ = State::kDone;
    return;
  }
  if (outcome.step == SocksHandshake::Step::kTarget) {
    early_ = std::move(outcome.extra);
    announce(std::move(outcome.target));
  }
}

void NetConnection::accept() {
  if (state_ != State::kVerdict) return;
  if (!write_all(socks_reply(channel::socks_reply::kSucceeded)))
    return fail(channel::reset_code::kIoError, "the guest program closed the SOCKS connection before the reply");
  state_ = State::kRelay;
  if (!early_.empty()) {
    channel_.send(stream_, early_);  // at most 512 bytes: always within a fresh stream's credit
    early_.clear();
  }
}

void NetConnection::refuse(std::uint8_t socks_code, const std::string& reason) {
  if (state_ != State::kVerdict) return;
  write_all(socks_reply(socks_code));
  std::uint32_t stream = stream_;
  stream_ = 0;
  channel_.reset_stream(stream, channel::reset_code::kRefused, reason.empty() ? "refused by the host" : reason);
  close_socket(false);
  state_ = State::kDone;
}

bool NetConnection::write_all(const std::string& bytes) {
  // Handshake replies are a few bytes on a socket that has sent nothing else: they fit its buffer.
  ssize_t n;
  do {
    n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(bytes.size());
}

void NetConnection::read_client() {
  std::size_t want = std::min(kReadChunk, channel_.credit(stream_));
  if (want == 0) return;
  char buf[kReadChunk];
  ssize_t n = ::read(fd_, buf, want);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n < 0) return fail(channel::reset_code::kIoError, std::string("the guest program's connection failed: ") + std::strerror(errno));
  if (n == 0) {
    client_ended_ = true;
    channel_.close_stream(stream_);
    return maybe_finish();
  }
  channel_.send(stream_, std::string_view(buf, static_cast<std::size_t>(n)));
}

std::optional<std::size_t> NetConnection::send_some(std::string_view bytes) {
  std::size_t taken = 0;
  while (taken < bytes.size() && fd_ >= 0) {
    ssize_t n = ::send(fd_, bytes.data() + taken, bytes.size() - taken, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n < 0) {
      fail(channel::reset_code::kIoError, std::string("the guest program's connection failed: ") + std::strerror(errno));
      return std::nullopt;
    }
    taken += static_cast<std::size_t>(n);
  }
  return taken;
}

void NetConnection::write_client() {
  if (pending_out()) {
    auto taken = send_some(std::string_view(out_).substr(out_at_));
    if (!taken) return;
    out_at_ += *taken;
    if (out_at_ == out_.size()) {
      out_.clear();
      out_at_ = 0;
    } else if (out_at_ >= out_.size() / 2) {
      out_.erase(0, out_at_);  // amortized: a byte moves at most once per halving
      out_at_ = 0;
    }
    if (*taken) channel_.consumed(stream_, *taken);
  }
  if (!pending_out() && host_ended_ && !shut_write_ && fd_ >= 0) {
    ::shutdown(fd_, SHUT_WR);
    shut_write_ = true;
  }
  maybe_finish();
}

void NetConnection::on_stream_data(std::uint32_t stream, std::string_view bytes) {
  if (state_ == State::kVerdict)
    return fail(channel::reset_code::kRefused, "data before net.accept on a SOCKS connection");
  if (state_ != State::kRelay || shut_write_) return channel_.consumed(stream, bytes.size());
  if (!pending_out()) {
    // Nothing waits: straight from the frame to the socket; only what it does not take is kept.
    auto taken = send_some(bytes);
    if (!taken) return;
    if (*taken) channel_.consumed(stream, *taken);
    bytes.remove_prefix(*taken);
    if (bytes.empty()) return maybe_finish();
  }
  out_.append(bytes);  // at most one window: the session enforces the credit
}

void NetConnection::on_stream_closed(std::uint32_t) {
  host_ended_ = true;
  if (state_ == State::kVerdict) return fail(channel::reset_code::kRefused, "the host closed a SOCKS connection before its verdict");
  write_client();
}

void NetConnection::on_stream_reset(std::uint32_t, std::uint32_t, std::string_view) {
  stream_ = 0;  // the connection forgot it
  close_socket(true);
  state_ = State::kDone;
}

void NetConnection::fail(std::uint32_t code, const std::string& why) {
  if (stream_) channel_.reset_stream(stream_, code, why.substr(0, channel::kMaxResetReason));
  stream_ = 0;
  close_socket(true);
  state_ = State::kDone;
}

void NetConnection::maybe_finish() {
  if (state_ != State::kRelay || !client_ended_ || !host_ended_ || pending_out()) return;
  stream_ = 0;  // both directions closed: the connection has forgotten the stream
  close_socket(false);
  state_ = State::kDone;
}

void NetConnection::abandon() {
  stream_ = 0;
  close_socket(true);
  state_ = State::kDone;
}

void NetConnection::close_socket(bool abortive) {
  if (fd_ < 0) return;
  if (abortive) {
    linger reset{1, 0};  // close with RST: the program sees "connection reset", not a clean end
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  }
  ::close(fd_);
  fd_ = -1;
}

}  // namespace lockroom::agent
