// GuestChannel; see guest_channel.h.
#include "server/channel/guest_channel.h"

#include <spdlog/spdlog.h>

namespace lockroom::channel {

namespace rpc_error = protocol::rpc_error;

namespace {

constexpr std::size_t kTimedOutMemory = 256;

Error violation(std::string message) { return make_error(ErrorCode::kInvalidInput, std::move(message)); }

// Agent-supplied text in our messages: bounded, so a lying agent cannot flood the logs.
std::string clip(std::string_view text, std::size_t max = 200) {
  if (text.size() <= max) return std::string(text);
  return std::string(text.substr(0, max)) + "...";
}

}  // namespace

GuestChannel::GuestChannel(uv_loop_t* loop, ChannelOptions options)
    : loop_(loop),
      options_(std::move(options)),
      scheduler_(loop),
      socket_(loop),
      decoder_(options_.settings.max_frame),
      session_(wire::Side::kHost, options_.settings),
      dispatcher_([this](std::string text) { send_control(std::move(text)); }, scheduler_, options_.max_pending_calls) {}

GuestChannel::~GuestChannel() {
  *alive_ = false;
  scheduler_.cancel_all();
}

Result<void> GuestChannel::start(int fd, Ready ready, Failed on_failed) {
  ready_ = std::move(ready);
  on_failed_ = std::move(on_failed);
  auto started = socket_.start(fd, SocketStream::Callbacks{
      [this](std::string_view bytes) { on_bytes(bytes); },
      // The socket closing is how a guest ends (destroyed, killed, crashed): whoever owns the
      // sandbox reports why; only a channel the guest broke is worth a warning of its own.
      [this](const std::string& why) { fail(why, spdlog::level::debug); },
  });
  if (!started) return started;
  wire::HelloParams hello;
  hello.host_version = options_.host_version;
  hello.settings = session_.mine();
  dispatcher_.call(wire::method::kHello, wire::to_json(hello), options_.hello_timeout,
                   [this](rpc::CallOutcome outcome) { on_hello_reply(std::move(outcome)); });
  return {};
}

void GuestChannel::on_hello_reply(rpc::CallOutcome outcome) {
  if (failed_ || closing_) return;
  if (outcome.error) return fail("hello failed: " + clip(outcome.error->message, 400));
  auto hello = wire::parse_hello_result(outcome.result);
  if (!hello) return fail("malformed reply to hello: " + hello.error().message);
  if (hello->protocol != wire::kProtocolVersion)
    return fail("the agent speaks channel protocol " + std::to_string(hello->protocol) + " but this server speaks " +
                std::to_string(wire::kProtocolVersion) + "; rebuild the guest image");
  if (auto established = session_.establish(hello->settings); !established)
    return fail("the agent's hello is unacceptable: " + established.error().message);
  spdlog::debug("guest channel ready: agent {} (pid {}, process limits by {})", clip(hello->agent_version, 64), hello->pid,
                hello->process_limit);
  if (auto ready = std::move(ready_)) ready(std::move(*hello));
}

// --- control

void GuestChannel::call(std::string_view method, const json& params, std::chrono::milliseconds timeout, rpc::CallHandler done) {
  if (failed_ || closing_) {
    std::string reason = failed_ ? "the guest channel failed: " + failure_ : "the guest channel is closed";
    scheduler_.start_timer(std::chrono::milliseconds(0), [done = std::move(done), reason] {
      done(rpc::CallOutcome{nullptr, protocol::RpcError{rpc_error::kRequestFailed, reason, nullptr}});
    });
    return;
  }
  dispatcher_.call(method, params, timeout, std::move(done));
}

void GuestChannel::on_notification(std::string method, NotificationHandler handler) {
  notifications_[std::move(method)] = std::move(handler);
}

void GuestChannel::send_control(std::string text) {
  if (failed_ || closing_) return;
  track_outgoing(text);
  if (auto sent = session_.send_control(text); !sent) {
    // Too big for the agent: answer the call ourselves, on a later turn (never re-entrantly).
    auto message = protocol::classify(text);
    if (auto* request = std::get_if<protocol::Request>(&message)) {
      std::string reply = protocol::encode_error(request->id, protocol::RpcError{rpc_error::kRequestFailed, sent.error().message, nullptr});
      std::string key = protocol::id_to_string(request->id);
      scheduler_.start_timer(std::chrono::milliseconds(0), [this, reply, key] {
        if (outstanding_.erase(key)) dispatcher_.handle_message(reply);
      });
    }
    return;
  }
  flush();
}

void GuestChannel::track_outgoing(const std::string& text) {
  // The dispatcher writes requests with "id" as the first key; read it without a parse.
  static const std::string kPrefix = "{\"id\":";
  if (text.compare(0, kPrefix.size(), kPrefix) == 0) {
    std::size_t end = kPrefix.size();
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    if (end > kPrefix.size() && end < text.size() && text[end] == ',') {
      outstanding_.insert(text.substr(kPrefix.size(), end - kPrefix.size()));
      return;
    }
  }
  auto message = protocol::classify(text);
  if (auto* request = std::get_if<protocol::Request>(&message)) {
    outstanding_.insert(protocol::id_to_string(request->id));
  } else if (auto* note = std::get_if<protocol::Notification>(&message); note && note->method == "$/cancelRequest") {
    // The dispatcher gave up on a call: a late answer to it is no lie.
    std::string key = protocol::dump(note->params.value("id", json(nullptr)));
    if (outstanding_.erase(key)) {
      timed_out_.push_back(key);
      if (timed_out_.size() > kTimedOutMemory) timed_out_.pop_front();
    }
  }
}

Result<void> GuestChannel::on_control(std::string_view text) {
  protocol::Message message = protocol::classify(text);
  if (auto* invalid = std::get_if<protocol::InvalidMessage>(&message))
    return violation("the agent sent an invalid control message: " + clip(invalid->error.message));
  if (auto* request = std::get_if<protocol::Request>(&message))
    return violation("the agent sent a request (\"" + clip(request->method, 64) + "\"); an agent may only answer and notify");
  if (auto* response = std::get_if<protocol::Response>(&message)) {
    std::string key = protocol::id_to_string(response->id);
    if (outstanding_.erase(key)) {
      dispatcher_.handle_message(text);
      return {};
    }
    for (const auto& late : timed_out_)
      if (late == key) return {};  // answered after we gave up: dropped
    return violation("the agent answered request id " + clip(key, 40) + ", which was never sent or was already answered");
  }
  auto& note = std::get<protocol::Notification>(message);
  if (!session_.established())
    return violation("the agent sent the notification \"" + clip(note.method, 64) + "\" before answering hello");
  if (note.method == "channel.error") {
    std::string why = note.params.is_object() && note.params.contains("message") && note.params["message"].is_string()
                          ? note.params["message"].get<std::string>()
                          : std::string("(no reason given)");
    return violation("the agent reported a channel protocol error: " + clip(why));
  }
  auto handler = notifications_.find(note.method);
  if (handler == notifications_.end())
    return violation("the agent sent an unknown notification \"" + clip(note.method, 64) + "\"");
  NotificationHandler fn = handler->second;
  if (auto handled = fn(note.params); !handled) return violation(note.method + ": " + handled.error().message);
  return {};
}

// --- input

void GuestChannel::on_bytes(std::string_view bytes) {
  if (failed_ || closing_) return;
  stats_.bytes_in += bytes.size();
  auto alive = alive_;
  auto fed = decoder_.feed(bytes, [this](const wire::Frame& frame) { return on_frame(frame); });
  if (!*alive) return;
  if (!fed && !failed_ && !closing_) return fail(fed.error().message);
  flush();
}

Result<void> GuestChannel::on_frame(const wire::Frame& frame) {
  if (failed_ || closing_) return make_error(ErrorCode::kCancelled, "the channel has stopped");
  stats_.frames_in++;
  auto event = session_.receive(frame);
  if (!event) return event.error();
  if (event->type == wire::Event::Type::kControl) return on_control(event->data);
  return on_stream_event(*event);
}

Result<void> GuestChannel::on_stream_event(const wire::Event& event) {
  using Type = wire::Event::Type;
  std::uint32_t id = event.stream;
  if (event.type == Type::kOpened) {
    streams_[id] = Stream{};
    return {};
  }
  auto it = streams_.find(id);
  if (it == streams_.end()) {
    if (event.type == Type::kData) session_.consumed(id, event.data.size());  // a detached stream
    return {};
  }
  Stream& s = it->second;
  switch (event.type) {
    case Type::kData:
      if (s.claimed && !s.paused) {
        deliver(id, s, event.data);
      } else {
        if (!s.claimed && held_total(true) + event.data.size() > options_.max_unclaimed_bytes)
          return violation("the agent sent more than " + std::to_string(options_.max_unclaimed_bytes) +
                           " bytes on streams that no reply has announced (stream " + std::to_string(id) + ")");
        s.held.append(event.data);
        stats_.max_held = std::max(stats_.max_held, held_total(false));
      }
      break;
    case Type::kWritable:
      pump(id);
      break;
    case Type::kPeerClosed:
      if (s.claimed && !s.paused && s.held.empty()) {
        auto on_end = s.handlers.on_end;
        if (event.finished) streams_.erase(it);
        if (on_end) on_end();
      } else {
        s.ended = true;
      }
      break;
    case Type::kReset: {
      auto on_reset = s.claimed ? s.handlers.on_reset : nullptr;
      streams_.erase(it);
      if (on_reset) on_reset(event.code, clip(event.data));
      break;
    }
    default:
      break;
  }
  return {};
}

void GuestChannel::deliver(std::uint32_t id, Stream& s, std::string_view bytes) {
  auto on_data = s.handlers.on_data;
  if (on_data) on_data(bytes);
  session_.consumed(id, bytes.size());
}

std::size_t GuestChannel::held_total(bool unclaimed_only) const {
  std::size_t total = 0;
  for (const auto& [id, s] : streams_)
    if (!unclaimed_only || !s.claimed) total += s.held.size();
  return total;
}

// --- streams

Result<void> GuestChannel::attach(std::uint32_t id, StreamHandlers handlers) {
  if (failed_ || closing_) return make_error(ErrorCode::kUnavailable, "the guest channel is not running");
  auto it = streams_.find(id);
  if (it == streams_.end()) return violation("stream " + std::to_string(id) + " was never opened by the agent, or is already closed");
  if (it->second.claimed) return violation("stream " + std::to_string(id) + " is already in use");
  it->second.handlers = std::move(handlers);
  it->second.claimed = true;
  pause(id, it->second.paused);  // delivers what arrived before the claim
  return {};
}

void GuestChannel::pause(std::uint32_t id, bool paused) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  it->second.paused = paused;
  if (paused || !it->second.claimed) return;
  auto alive = alive_;
  while (true) {
    it = streams_.find(id);
    if (it == streams_.end() || it->second.paused) return;
    Stream& s = it->second;
    if (!s.held.empty()) {
      std::string held = std::move(s.held);
      s.held.clear();
      deliver(id, s, held);
      if (!*alive) return;
      continue;
    }
    if (s.ended) {
      auto on_end = s.handlers.on_end;
      s.ended = false;
      if (!session_.is_open(id)) streams_.erase(it);
      if (on_end) on_end();
    }
    break;
  }
  if (*alive) flush();
}

Result<void> GuestChannel::write(std::uint32_t id, std::string_view bytes) {
  auto it = streams_.find(id);
  if (failed_ || closing_ || it == streams_.end() || !it->second.claimed || it->second.close_after || !session_.is_open(id))
    return make_error(ErrorCode::kWrongState, "stream " + std::to_string(id) + " is not open for writing");
  Stream& s = it->second;
  // What would wait after this call: all of `bytes` behind a queue, or what the credit leaves.
  std::size_t direct = s.queued() == 0 ? std::min(bytes.size(), session_.send_credit(id)) : 0;
  if (s.queued() + bytes.size() - direct > options_.max_stream_queue) {
    s.want_writable = true;
    return make_error(ErrorCode::kLimitExceeded, "stream " + std::to_string(id) + " already has " + std::to_string(s.queued()) +
                                                     " bytes waiting for the guest; write again after on_writable");
  }
  if (direct > 0) bytes.remove_prefix(session_.send_data(id, bytes.substr(0, direct)));
  if (!bytes.empty()) s.out.append(bytes);
  pump(id);
  return {};
}

void GuestChannel::pump(std::uint32_t id) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  Stream& s = it->second;
  if (s.queued() > 0) {
    s.out_at += session_.send_data(id, std::string_view(s.out).substr(s.out_at));
    if (s.out_at == s.out.size()) {
      if (s.out.capacity() > (64u << 10)) std::string().swap(s.out);  // an idle stream holds no MiB
      s.out.clear();
      s.out_at = 0;
    } else if (s.out_at >= s.out.size() / 2) {
      s.out.erase(0, s.out_at);  // amortized: each byte moves at most once per halving
      s.out_at = 0;
    }
  }
  if (s.queued() > 0) return flush();
  if (s.close_after && session_.close_stream(id) && s.held.empty() && !s.ended) {
    streams_.erase(it);
    return flush();
  }
  if (s.want_writable) {
    s.want_writable = false;
    auto on_writable = s.handlers.on_writable;
    flush();
    if (on_writable) on_writable();
    return;
  }
  flush();
}

void GuestChannel::close_stream(std::uint32_t id) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  it->second.close_after = true;
  pump(id);
}

void GuestChannel::reset_stream(std::uint32_t id, std::uint32_t code, std::string_view reason) {
  streams_.erase(id);
  session_.reset_stream(id, code, reason);
  flush();
}

void GuestChannel::detach(std::uint32_t id) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  Stream& s = it->second;
  if (!s.close_after || s.queued() == 0 || !session_.is_open(id)) {
    streams_.erase(it);
    return;
  }
  // An orderly close still owes the agent bytes (and then the CLOSE): they go out as credit
  // comes, with nobody listening any more; the entry goes when both sides have closed.
  s.handlers = {};
  s.paused = false;
  if (!s.held.empty()) session_.consumed(id, s.held.size());
  s.held.clear();
}

// --- output, failure, shutdown

void GuestChannel::flush() {
  if (session_.output_size() == 0 || closing_) return;
  std::string out = session_.take_output();
  stats_.bytes_out += out.size();
  socket_.write(std::move(out));
}

void GuestChannel::fail_streams(const std::string& reason) {
  auto streams = std::move(streams_);
  streams_.clear();
  auto alive = alive_;
  for (auto& [id, s] : streams) {
    if (s.claimed && s.handlers.on_reset) s.handlers.on_reset(wire::reset_code::kCancelled, reason);
    if (!*alive) return;
  }
}

void GuestChannel::fail(const std::string& reason, spdlog::level::level_enum severity) {
  if (failed_ || closing_) return;
  failed_ = true;
  failure_ = reason;
  spdlog::log(severity, "guest channel failed: {}", reason);
  socket_.stop_reading();
  auto alive = alive_;
  outstanding_.clear();
  dispatcher_.fail_pending_calls("the guest channel failed: " + reason);
  if (!*alive) return;
  fail_streams(reason);
  if (!*alive) return;
  Error error = make_error(ErrorCode::kUnavailable, "guest channel failed: " + reason);
  if (auto ready = std::move(ready_)) {
    ready(error);
  } else if (auto on_failed = std::move(on_failed_)) {
    on_failed(error);
  }
}

void GuestChannel::close(std::function<void()> done) {
  if (closing_) return;
  auto alive = alive_;
  if (!failed_) {
    closing_ = true;
    socket_.stop_reading();
    outstanding_.clear();
    dispatcher_.fail_pending_calls("the guest channel was closed");
    if (!*alive) return;
    fail_streams("the guest channel was closed");
    if (!*alive) return;
    ready_ = nullptr;
  }
  closing_ = true;
  on_failed_ = nullptr;
  scheduler_.cancel_all();
  socket_.close(std::move(done));
}

}  // namespace lockroom::channel
