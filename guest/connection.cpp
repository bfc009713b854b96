// The agent's channel connection; see connection.h.
#include "guest/connection.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "guest/log.h"
#include "protocol/jsonrpc.h"

namespace lockroom::agent {

namespace {
constexpr std::size_t kReadChunk = 64u << 10;
constexpr int kReadsPerPoll = 16;  // then let other descriptors have a turn
}  // namespace

Connection::Connection(Transport transport, channel::Settings mine)
    : transport_(std::move(transport)),
      mine_(mine),
      decoder_(mine.max_frame),
      session_(channel::Side::kAgent, mine),
      state_(transport_.is_port ? State::kWaiting : State::kActive) {}

Connection::~Connection() {
  if (transport_.fd >= 0) ::close(transport_.fd);
}

short Connection::poll_events() const {
  switch (state_) {
    case State::kActive: {
      short events = queued() < kReadStop ? POLLIN : 0;
      if (queued() > 0) events |= POLLOUT;
      return events;
    }
    case State::kDraining:
      return static_cast<short>(POLLIN | (queued() > 0 ? POLLOUT : 0));
    default:
      return 0;
  }
}

void Connection::on_poll(short revents) {
  if (revents & POLLOUT) flush();
  if (revents & (POLLIN | POLLHUP | POLLERR)) read_input();
}

void Connection::check_host() {
  if (state_ != State::kWaiting) return;
  pollfd p{transport_.fd, POLLIN, 0};
  if (::poll(&p, 1, 0) < 0) return;
  if (p.revents & (POLLHUP | POLLERR | POLLNVAL)) return;  // still no host on the other end
  log_info("a host attached to " + transport_.description);
  decoder_.reset();
  state_ = State::kActive;
}

void Connection::read_input() {
  char buf[kReadChunk];
  for (int i = 0; i < kReadsPerPoll && (state_ == State::kActive || state_ == State::kDraining); ++i) {
    ssize_t n = ::read(transport_.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n < 0) return host_gone(std::string("reading the channel failed: ") + std::strerror(errno));
    if (n == 0) return host_gone("the host closed the channel");
    if (state_ == State::kDraining) continue;
    auto fed = decoder_.feed(std::string_view(buf, static_cast<std::size_t>(n)),
                             [this](const channel::Frame& frame) { return on_frame(frame); });
    if (!fed) return violation(fed.error().message);
    flush();
  }
}

Result<void> Connection::on_frame(const channel::Frame& frame) {
  auto event = session_.receive(frame);
  if (!event) return event.error();
  using Type = channel::Event::Type;
  std::uint32_t id = event->stream;
  auto owner = [this, id]() -> StreamOwner* {
    auto it = owners_.find(id);
    return it == owners_.end() ? nullptr : it->second;
  };
  switch (event->type) {
    case Type::kNone:
    case Type::kWritable:
      break;
    case Type::kControl:
      if (on_message_) on_message_(event->data);
      break;
    case Type::kOpened:
      session_.reset_stream(id, channel::reset_code::kRefused, "the agent accepts no streams opened by the host in protocol 1");
      break;
    case Type::kData:
      if (StreamOwner* o = owner()) {
        o->on_stream_data(id, event->data);
      } else {
        session_.consumed(id, event->data.size());
      }
      break;
    case Type::kPeerClosed:
      if (StreamOwner* o = owner()) o->on_stream_closed(id);
      if (event->finished) owners_.erase(id);
      break;
    case Type::kReset:
      if (StreamOwner* o = owner()) {
        owners_.erase(id);
        o->on_stream_reset(id, event->code, event->data);
      }
      break;
  }
  return {};
}

void Connection::violation(const std::string& why) {
  log_error("the host broke the channel protocol: " + why + "; dropping this connection's state");
  drop_session("channel protocol violation: " + why);
  state_ = State::kDraining;
  auto sent = session_.send_control(protocol::encode_notification("channel.error", protocol::json{{"message", why}}));
  (void)sent;  // a short message always fits the handshake limit
  flush();
}

void Connection::host_gone(const std::string& why) {
  if (state_ == State::kWaiting || state_ == State::kClosed) return;
  log_info(why + " (" + transport_.description + ")");
  drop_session(why);
  out_.clear();
  out_pos_ = 0;
  state_ = transport_.is_port ? State::kWaiting : State::kClosed;
}

void Connection::drop_session(const std::string& why) {
  std::vector<std::pair<std::uint32_t, StreamOwner*>> owners(owners_.begin(), owners_.end());
  owners_.clear();
  for (auto& [id, owner] : owners) owner->on_stream_reset(id, channel::reset_code::kCancelled, why);
  session_.clear();
  decoder_.reset();
  out_.clear();
  out_pos_ = 0;
  if (on_lost_) on_lost_(why);
}

void Connection::restart_session(const std::string& why) {
  std::vector<std::pair<std::uint32_t, StreamOwner*>> owners(owners_.begin(), owners_.end());
  owners_.clear();
  for (auto& [id, owner] : owners) owner->on_stream_reset(id, channel::reset_code::kCancelled, why);
  // The decoder is in the middle of delivering the hello that asked for this: keep its position.
  // Output of the old session is for a host that is gone.
  session_.clear();
  out_.clear();
  out_pos_ = 0;
  if (on_lost_) on_lost_(why);
}

Result<void> Connection::establish(const channel::Settings& host) { return session_.establish(host); }

void Connection::flush() {
  if (state_ != State::kActive && state_ != State::kDraining) {
    session_.take_output();
    return;
  }
  if (out_pos_ == out_.size()) {
    out_ = session_.take_output();
    out_pos_ = 0;
  } else if (session_.output_size() > 0) {
    out_.append(session_.take_output());
  }
  while (out_pos_ < out_.size()) {
    ssize_t n = ::write(transport_.fd, out_.data() + out_pos_, out_.size() - out_pos_);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n < 0) return host_gone(std::string("writing the channel failed: ") + std::strerror(errno));
    out_pos_ += static_cast<std::size_t>(n);
  }
  if (out_pos_ == out_.size()) {
    out_.clear();
    out_pos_ = 0;
  } else if (out_pos_ > (1u << 20)) {
    out_.erase(0, out_pos_);
    out_pos_ = 0;
  }
}

void Connection::send_message(const std::string& text) {
  if (state_ != State::kActive) return;
  if (auto sent = session_.send_control(text); !sent) log_error("bug: a control message was not sent: " + sent.error().message);
}

Result<std::uint32_t> Connection::open_stream(StreamOwner* owner) {
  if (state_ != State::kActive) return make_error(ErrorCode::kUnavailable, "no host is connected");
  auto id = session_.open_stream();
  if (id) owners_[*id] = owner;
  return id;
}

std::size_t Connection::credit(std::uint32_t stream) const {
  return state_ == State::kActive ? session_.send_credit(stream) : 0;
}

std::size_t Connection::send(std::uint32_t stream, std::string_view bytes) {
  if (state_ != State::kActive) return 0;
  return session_.send_data(stream, bytes);
}

void Connection::close_stream(std::uint32_t stream) {
  if (session_.close_stream(stream)) owners_.erase(stream);
}

void Connection::reset_stream(std::uint32_t stream, std::uint32_t code, std::string_view reason) {
  owners_.erase(stream);
  session_.reset_stream(stream, code, reason);
}

}  // namespace lockroom::agent
