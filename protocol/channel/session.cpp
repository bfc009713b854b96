// Session: stream states, credit and control reassembly; see session.h.
#include "protocol/channel/session.h"

#include <algorithm>

namespace lockroom::protocol::channel {

namespace {

constexpr std::uint32_t kMaxStreamId = 0x7fffffffu;

Error violation(std::string message) { return make_error(ErrorCode::kInvalidInput, std::move(message)); }

Event make_event(Event::Type type, std::uint32_t stream, std::string_view data = {}, std::uint32_t code = 0) {
  Event event;
  event.type = type;
  event.stream = stream;
  event.data = data;
  event.code = code;
  return event;
}

std::string on(const Frame& frame) {
  return std::string(kind_name(frame.header.kind)) + " frame on stream " + std::to_string(frame.header.stream);
}

Result<void> in_range(const char* name, std::uint32_t value, std::uint32_t lo, std::uint32_t hi) {
  if (value >= lo && value <= hi) return {};
  return violation("hello: \"" + std::string(name) + "\" is " + std::to_string(value) + ", outside the protocol's range [" +
                   std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

}  // namespace

Session::Session(Side side, Settings mine) : side_(side), mine_(mine), peer_(mine) {
  mine_.max_frame = std::clamp(mine_.max_frame, kMinFramePayload, kMaxFramePayload);
  mine_.stream_window = std::clamp(mine_.stream_window, kMinWindow, kMaxWindow);
  mine_.max_streams = std::clamp(mine_.max_streams, 1u, kMaxStreamsLimit);
  mine_.max_control = std::clamp(mine_.max_control, kMinControl, kMaxControl);
  clear();
}

void Session::clear() {
  established_ = false;
  streams_.clear();
  next_own_ = side_ == Side::kHost ? 1 : 2;
  highest_peer_ = 0;
  control_.clear();
  control_pending_ = false;
  out_.clear();
}

Result<void> Session::establish(const Settings& peer) {
  if (auto r = in_range("maxFrame", peer.max_frame, kMinFramePayload, kMaxFramePayload); !r) return r;
  if (auto r = in_range("streamWindow", peer.stream_window, kMinWindow, kMaxWindow); !r) return r;
  if (auto r = in_range("maxStreams", peer.max_streams, 1, kMaxStreamsLimit); !r) return r;
  if (auto r = in_range("maxControl", peer.max_control, kMinControl, kMaxControl); !r) return r;
  peer_ = peer;
  established_ = true;
  return {};
}

bool Session::ours(std::uint32_t stream) const { return (stream % 2 == 1) == (side_ == Side::kHost); }

std::uint32_t Session::send_frame_limit() const { return established_ ? peer_.max_frame : kMinFramePayload; }

void Session::forget(std::uint32_t stream) { streams_.erase(stream); }

// --- inbound

Result<Event> Session::receive(const Frame& frame) {
  if (frame.header.kind == Kind::kControl) return on_control(frame);
  if (!established_)
    return violation(on(frame) + " arrived before the hello handshake finished; only CONTROL frames may come first");
  if (frame.header.kind == Kind::kOpen) return on_open(frame);
  auto found = find_inbound(frame);
  if (!found) return found.error();
  Stream* s = *found;
  switch (frame.header.kind) {
    case Kind::kData:
      if (!s) return violation(on(frame) + ", which is already closed: data on a closed stream");
      return on_data(frame, *s);
    case Kind::kWindow:
      if (!s) return Event{};  // credit racing with our close: allowed and meaningless
      return on_window(frame, *s);
    case Kind::kClose:
      if (!s) return violation(on(frame) + ", which is already closed");
      return on_close(frame, *s);
    case Kind::kReset:
      return on_reset(frame, s);
    default:
      return violation(on(frame) + ": unexpected kind");
  }
}

Result<Session::Stream*> Session::find_inbound(const Frame& frame) {
  std::uint32_t id = frame.header.stream;
  if (auto it = streams_.find(id); it != streams_.end()) return &it->second;
  bool was_opened = ours(id) ? id < next_own_ : id <= highest_peer_;
  if (was_opened) return static_cast<Stream*>(nullptr);
  return violation(on(frame) + ", which was never opened");
}

Result<Event> Session::on_control(const Frame& frame) {
  if (!control_pending_) {
    if (control_.capacity() > kMinControl) control_ = std::string();
    control_.clear();
  }
  std::size_t total = control_.size() + frame.payload.size();
  if (total > mine_.max_control)
    return violation("a control message grew to " + std::to_string(total) + " bytes, more than the limit of " +
                     std::to_string(mine_.max_control) + " bytes declared in hello");
  bool more = (frame.header.flags & kFlagMore) != 0;
  if (!more && !control_pending_) return make_event(Event::Type::kControl, 0, frame.payload);
  control_.append(frame.payload);
  control_pending_ = more;
  if (more) return Event{};
  return make_event(Event::Type::kControl, 0, control_);
}

Result<Event> Session::on_open(const Frame& frame) {
  std::uint32_t id = frame.header.stream;
  if (ours(id))
    return violation(on(frame) + ": that id belongs to this side (the host opens odd ids, the agent even ids)");
  if (id <= highest_peer_)
    return violation(on(frame) + ": stream ids must increase, and " + std::to_string(highest_peer_) + " was already opened");
  if (id > kMaxStreamId) return violation(on(frame) + ": stream ids end at " + std::to_string(kMaxStreamId));
  if (streams_.size() >= mine_.max_streams)
    return violation(on(frame) + " exceeds the limit of " + std::to_string(mine_.max_streams) + " open streams");
  highest_peer_ = id;
  Stream s;
  s.recv_credit = mine_.stream_window;
  s.send_credit = peer_.stream_window;
  streams_.emplace(id, s);
  return make_event(Event::Type::kOpened, id);
}

Result<Event> Session::on_data(const Frame& frame, Stream& s) {
  if (s.they_closed) return violation(on(frame) + " after the peer half-closed that stream");
  if (frame.payload.size() > s.recv_credit)
    return violation(on(frame) + " carries " + std::to_string(frame.payload.size()) + " bytes but the stream had only " +
                     std::to_string(s.recv_credit) + " bytes of credit: the peer ignores flow control");
  s.recv_credit -= static_cast<std::uint32_t>(frame.payload.size());
  if (s.state == State::kResetSent) return Event{};  // in flight before our RESET: dropped
  return make_event(Event::Type::kData, frame.header.stream, frame.payload);
}

Result<Event> Session::on_window(const Frame& frame, Stream& s) {
  std::uint32_t increment = get_u32(frame.payload.data());
  if (increment == 0) return violation(on(frame) + " grants 0 bytes; an increment must be at least 1");
  if (s.state == State::kResetSent) return Event{};
  std::uint64_t total = std::uint64_t{s.send_credit} + increment;
  if (total > peer_.stream_window)
    return violation(on(frame) + " would raise the credit to " + std::to_string(total) + " bytes, more than the window of " +
                     std::to_string(peer_.stream_window) + " bytes declared in hello (credit overflow)");
  s.send_credit = static_cast<std::uint32_t>(total);
  return make_event(Event::Type::kWritable, frame.header.stream);
}

Result<Event> Session::on_close(const Frame& frame, Stream& s) {
  if (s.state == State::kResetSent) return Event{};
  if (s.they_closed) return violation(on(frame) + ": the stream was already half-closed by the peer");
  s.they_closed = true;
  Event event = make_event(Event::Type::kPeerClosed, frame.header.stream);
  if (s.we_closed) {
    forget(frame.header.stream);
    event.finished = true;
  }
  return event;
}

Result<Event> Session::on_reset(const Frame& frame, Stream* s) {
  std::uint32_t id = frame.header.stream;
  if (!s) return Event{};  // a reset crossing our final CLOSE: nothing left to abort
  if (s->state == State::kResetSent) {
    forget(id);  // the acknowledgement of our own RESET, or a RESET crossing it
    return Event{};
  }
  forget(id);
  std::string ack;
  put_u32(ack, reset_code::kAck);
  append_frame(out_, Kind::kReset, 0, id, ack);
  Event event = make_event(Event::Type::kReset, id, frame.payload.substr(4), get_u32(frame.payload.data()));
  event.finished = true;
  return event;
}

void Session::consumed(std::uint32_t stream, std::size_t n) {
  auto it = streams_.find(stream);
  if (it == streams_.end() || n == 0) return;
  Stream& s = it->second;
  if (s.state != State::kOpen || s.they_closed) return;  // no more data will come: no credit needed
  std::uint64_t unacked = std::uint64_t{s.unacked} + n;
  s.unacked = static_cast<std::uint32_t>(std::min<std::uint64_t>(unacked, mine_.stream_window));
  if (s.unacked < mine_.stream_window / 2) return;
  std::string increment;
  put_u32(increment, s.unacked);
  append_frame(out_, Kind::kWindow, 0, stream, increment);
  s.recv_credit = std::min(mine_.stream_window, s.recv_credit + s.unacked);
  s.unacked = 0;
}

// --- outbound

Result<void> Session::send_control(std::string_view message) {
  std::uint32_t limit = established_ ? peer_.max_control : kHandshakeControl;
  if (message.empty()) return make_error(ErrorCode::kInvalidInput, "an empty control message cannot be sent");
  if (message.size() > limit)
    return make_error(ErrorCode::kLimitExceeded, "a control message of " + std::to_string(message.size()) +
                                                     " bytes is larger than the peer's limit of " + std::to_string(limit) + " bytes");
  std::uint32_t chunk = send_frame_limit();
  while (!message.empty()) {
    std::string_view part = message.substr(0, chunk);
    message.remove_prefix(part.size());
    append_frame(out_, Kind::kControl, message.empty() ? 0 : kFlagMore, 0, part);
  }
  return {};
}

Result<std::uint32_t> Session::open_stream() {
  if (!established_) return make_error(ErrorCode::kWrongState, "streams can be opened only after the hello handshake");
  std::uint32_t limit = std::min(mine_.max_streams, peer_.max_streams);
  if (streams_.size() >= limit)
    return make_error(ErrorCode::kLimitExceeded, "the channel already has " + std::to_string(streams_.size()) +
                                                     " open streams, the most allowed; close some first");
  if (next_own_ > kMaxStreamId)
    return make_error(ErrorCode::kLimitExceeded, "this connection has used up its stream ids; reconnect to open more");
  std::uint32_t id = next_own_;
  next_own_ += 2;
  Stream s;
  s.recv_credit = mine_.stream_window;
  s.send_credit = peer_.stream_window;
  streams_.emplace(id, s);
  append_frame(out_, Kind::kOpen, 0, id, {});
  return id;
}

std::size_t Session::send_credit(std::uint32_t stream) const {
  auto it = streams_.find(stream);
  if (it == streams_.end() || it->second.state != State::kOpen || it->second.we_closed) return 0;
  return it->second.send_credit;
}

std::size_t Session::send_data(std::uint32_t stream, std::string_view bytes) {
  std::size_t n = std::min(bytes.size(), send_credit(stream));
  if (n == 0) return 0;
  streams_[stream].send_credit -= static_cast<std::uint32_t>(n);
  std::uint32_t chunk = send_frame_limit();
  for (std::size_t at = 0; at < n; at += chunk) {
    append_frame(out_, Kind::kData, 0, stream, bytes.substr(at, std::min<std::size_t>(chunk, n - at)));
  }
  return n;
}

bool Session::close_stream(std::uint32_t stream) {
  auto it = streams_.find(stream);
  if (it == streams_.end() || it->second.state != State::kOpen || it->second.we_closed) return false;
  it->second.we_closed = true;
  append_frame(out_, Kind::kClose, 0, stream, {});
  if (!it->second.they_closed) return false;
  forget(stream);
  return true;
}

void Session::reset_stream(std::uint32_t stream, std::uint32_t code, std::string_view reason) {
  auto it = streams_.find(stream);
  if (it == streams_.end() || it->second.state != State::kOpen) return;
  it->second.state = State::kResetSent;
  std::string payload;
  put_u32(payload, code);
  payload.append(reason.substr(0, kMaxResetReason));
  append_frame(out_, Kind::kReset, 0, stream, payload);
}

bool Session::is_open(std::uint32_t stream) const {
  auto it = streams_.find(stream);
  return it != streams_.end() && it->second.state == State::kOpen;
}

bool Session::peer_closed(std::uint32_t stream) const {
  auto it = streams_.find(stream);
  return it == streams_.end() || it->second.they_closed || it->second.state != State::kOpen;
}

std::string Session::take_output() {
  std::string out;
  out.swap(out_);
  return out;
}

}  // namespace lockroom::protocol::channel
