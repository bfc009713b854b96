// Dispatcher; see dispatcher.h.
#include "server/rpc/dispatcher.h"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace lockroom::rpc {

namespace rpc_error = protocol::rpc_error;
namespace kind = protocol::failure_kind;

namespace {

// The wire trace's lines are built only when someone reads them.
bool tracing() { return spdlog::default_logger_raw()->should_log(spdlog::level::trace); }

long long ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
}

// " error -32602" for an error reply, "" for a result: the tail of a traced reply.
std::string error_tail(const RpcError* error) { return error ? " error " + std::to_string(error->code) : std::string(); }

}  // namespace

namespace detail {

// What replies need of the dispatcher. Held by shared_ptr so a Reply that outlives the
// dispatcher (a handler's callback firing during teardown) finds it gone and does nothing.
struct Outbox {
  Dispatcher::Send send;
  DispatcherStats stats;
  std::unordered_map<std::string, std::weak_ptr<ReplyState>> in_flight;  // by id_to_string(id)
};

struct ReplyState {
  std::weak_ptr<Outbox> outbox;
  Id id;
  std::string key;
  std::string method;
  bool replied = false;
  bool cancelled = false;         // answered -32800 (or abandoned): later replies are dropped quietly
  bool cancel_requested = false;  // the client asked; the handler answers itself (answers_cancel)
  bool answers_cancel = false;
  std::vector<std::function<void()>> cancel_callbacks;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

  // `error` is the error being sent, or null for a result (only for the trace).
  void send(const std::string& text, const RpcError* error) {
    replied = true;
    if (tracing()) spdlog::trace("--> reply:{}({}) {} ms{}", method, protocol::id_to_string(id), ms_since(started), error_tail(error));
    cancel_callbacks.clear();  // they may hold the Reply: keeping them would be a cycle
    if (auto box = outbox.lock()) {
      box->in_flight.erase(key);
      box->send(text);
    }
  }

  // A reply after the first is dropped; after a cancel it is expected, otherwise it is a bug.
  bool claim(const char* what) {
    if (!replied) return true;
    if (cancelled) return false;
    if (auto box = outbox.lock()) box->stats.double_replies++;
    spdlog::error("bug: second reply ({}) to request {} ({}) was dropped", what, protocol::id_to_string(id), method);
    return false;
  }

  // Answers now with `error`; a later reply from the handler is expected and dropped quietly.
  void abandon(const RpcError& error) {
    if (replied) return;
    cancelled = true;
    cancel_callbacks.clear();
    send(protocol::encode_error(id, error), &error);
  }

  void cancel() {
    if (replied || cancel_requested) return;
    if (auto box = outbox.lock()) box->stats.cancelled++;
    auto callbacks = std::move(cancel_callbacks);  // send() clears them
    if (answers_cancel) {
      cancel_requested = true;  // the handler answers: -32800 if it stopped, else its result
    } else {
      cancelled = true;
      RpcError error{rpc_error::kRequestCancelled, "request " + protocol::id_to_string(id) + " (" + method + ") was cancelled", nullptr};
      send(protocol::encode_error(id, error), &error);
    }
    for (auto& fn : callbacks) {
      try {
        fn();
      } catch (const std::exception& e) {
        spdlog::error("cancel callback of {} threw: {}", method, e.what());
      } catch (...) {
        spdlog::error("cancel callback of {} threw a non-standard exception", method);
      }
    }
  }

  ~ReplyState() {
    if (replied) return;
    auto box = outbox.lock();
    if (!box) return;
    box->stats.dropped_replies++;
    spdlog::error("bug: the handler for {} let go of request {} without replying", method, protocol::id_to_string(id));
    try {
      RpcError error{rpc_error::kInternalError, "internal error: " + method + " finished without a reply", nullptr};
      send(protocol::encode_error(id, error), &error);
    } catch (...) {
      // A destructor must not throw; the transport logs its own failures.
    }
  }
};

}  // namespace detail

void Reply::result(json value) const {
  if (!state_->claim("result")) return;
  state_->send(protocol::encode_result(state_->id, value), nullptr);
}

void Reply::error(RpcError error) const {
  if (!state_->claim("error")) return;
  state_->send(protocol::encode_error(state_->id, error), &error);
}

bool Reply::replied() const { return state_->replied; }
bool Reply::cancelled() const { return state_->cancelled || state_->cancel_requested; }
const Id& Reply::id() const { return state_->id; }
const std::string& Reply::method() const { return state_->method; }

void Reply::on_cancel(std::function<void()> fn) const {
  if (state_->cancelled || state_->cancel_requested) {
    fn();
    return;
  }
  if (!state_->replied) state_->cancel_callbacks.push_back(std::move(fn));
}

void Reply::on_cancel_answer_myself(std::function<void()> fn) const {
  if (!state_->cancelled && !state_->replied) state_->answers_cancel = true;
  on_cancel(std::move(fn));
}

Dispatcher::Dispatcher(Send send, Scheduler& scheduler, std::size_t max_pending_calls)
    : outbox_(std::make_shared<detail::Outbox>()), scheduler_(scheduler), max_pending_calls_(max_pending_calls) {
  outbox_->send = std::move(send);
}

Dispatcher::~Dispatcher() {
  for (auto& [key, call] : calls_) scheduler_.cancel_timer(call.timer);
}

const DispatcherStats& Dispatcher::stats() const { return outbox_->stats; }
std::size_t Dispatcher::requests_in_flight() const { return outbox_->in_flight.size(); }

void Dispatcher::on_request(std::string method, RequestHandler handler) { requests_[std::move(method)] = std::move(handler); }

void Dispatcher::on_notification(std::string method, NotificationHandler handler) {
  notifications_[std::move(method)] = std::move(handler);
}

std::vector<std::string> Dispatcher::request_methods() const {
  std::vector<std::string> out;
  out.reserve(requests_.size());
  for (const auto& [method, handler] : requests_) out.push_back(method);
  std::sort(out.begin(), out.end());
  return out;
}

void Dispatcher::handle_message(std::string_view text) {
  protocol::Message message = protocol::classify(text);
  if (auto* request = std::get_if<protocol::Request>(&message)) return dispatch_request(std::move(*request));
  if (auto* notification = std::get_if<protocol::Notification>(&message)) return dispatch_notification(std::move(*notification));
  if (auto* response = std::get_if<protocol::Response>(&message)) return handle_response(std::move(*response));
  auto& invalid = std::get<protocol::InvalidMessage>(message);
  spdlog::warn("{}", invalid.error.message);
  if (invalid.is_response) {
    if (invalid.id) {
      finish_call(protocol::id_to_string(*invalid.id),
                  CallOutcome{nullptr, protocol::request_failed(kind::kUnavailable, "the client sent a malformed reply: " + invalid.error.message)});
    }
    return;
  }
  if (tracing()) spdlog::trace("--> reply:({}){}", invalid.id ? protocol::id_to_string(*invalid.id) : "null", error_tail(&invalid.error));
  outbox_->send(protocol::encode_error(invalid.id, invalid.error));
}

void Dispatcher::handle_framing_error(const std::string& description) {
  spdlog::warn("framing: {}", description);
  RpcError error{rpc_error::kParseError, description, nullptr};
  if (tracing()) spdlog::trace("--> reply:(null){}", error_tail(&error));
  outbox_->send(protocol::encode_error(std::nullopt, error));
}

void Dispatcher::dispatch_request(protocol::Request&& request) {
  std::string key = protocol::id_to_string(request.id);
  if (tracing()) spdlog::trace("<-- {}({})", request.method, key);
  if (auto it = outbox_->in_flight.find(key); it != outbox_->in_flight.end() && !it->second.expired()) {
    RpcError error{rpc_error::kInvalidRequest, "invalid request: id " + key + " is already in use by a request that has not been answered", nullptr};
    if (tracing()) spdlog::trace("--> reply:{}({}){}", request.method, key, error_tail(&error));
    outbox_->send(protocol::encode_error(request.id, error));
    return;
  }
  auto state = std::make_shared<detail::ReplyState>();
  state->outbox = outbox_;
  state->id = request.id;
  state->key = key;
  state->method = request.method;
  outbox_->in_flight[key] = state;
  Reply reply(std::move(state));

  if (gate_) {
    GateDecision decision = gate_(request.method, true);
    if (!decision.allow) return reply.error(std::move(decision.error));
  }
  auto handler = requests_.find(request.method);
  if (handler == requests_.end()) {
    return reply.error(rpc_error::kMethodNotFound, "unknown method \"" + request.method + "\"");
  }
  try {
    handler->second(std::move(request.params), reply);
  } catch (const std::exception& e) {
    spdlog::error("handler for {} threw: {}", request.method, e.what());
    if (!reply.replied()) reply.error(rpc_error::kInternalError, "internal error in " + request.method + ": " + e.what());
  } catch (...) {
    spdlog::error("handler for {} threw a non-standard exception", request.method);
    if (!reply.replied()) reply.error(rpc_error::kInternalError, "internal error in " + request.method);
  }
}

void Dispatcher::dispatch_notification(protocol::Notification&& notification) {
  if (tracing()) spdlog::trace("<-- {}", notification.method);
  if (gate_ && !gate_(notification.method, false).allow) {
    spdlog::debug("dropped notification {} in the current state", notification.method);
    return;
  }
  if (notification.method == "$/cancelRequest") return cancel_incoming(notification.params);
  auto handler = notifications_.find(notification.method);
  if (handler == notifications_.end()) {
    spdlog::debug("ignored unknown notification {}", notification.method);
    return;
  }
  try {
    handler->second(notification.params);
  } catch (const std::exception& e) {
    spdlog::error("handler for notification {} threw: {}", notification.method, e.what());
  } catch (...) {
    spdlog::error("handler for notification {} threw a non-standard exception", notification.method);
  }
}

void Dispatcher::cancel_incoming(const json& params) {
  if (!params.is_object() || !params.contains("id")) {
    spdlog::warn("$/cancelRequest without an id ignored");
    return;
  }
  auto id = protocol::read_id(params["id"]);
  if (!id) {
    spdlog::warn("$/cancelRequest with an invalid id {} ignored", protocol::dump(params["id"]));
    return;
  }
  auto it = outbox_->in_flight.find(protocol::id_to_string(*id));
  if (it == outbox_->in_flight.end()) return;  // already answered: cancellation is advisory
  if (auto state = it->second.lock()) state->cancel();
}

void Dispatcher::notify(std::string_view method, const json& params) {
  if (tracing()) spdlog::trace("--> {}", method);
  outbox_->send(protocol::encode_notification(method, params));
}

void Dispatcher::call(std::string_view method, const json& params, std::chrono::milliseconds timeout, CallHandler done) {
  if (calls_.size() >= max_pending_calls_) {
    // Answer on a later turn of the loop, so callers never see their callback run re-entrantly.
    std::string reason = "too many requests (" + std::to_string(calls_.size()) + ") are waiting for the client; " +
                         std::string(method) + " was not sent";
    scheduler_.start_timer(std::chrono::milliseconds(0), [done = std::move(done), reason] {
      done(CallOutcome{nullptr, protocol::request_failed(kind::kLimitExceeded, reason)});
    });
    return;
  }
  Id id{next_call_id_++};
  std::string key = protocol::id_to_string(id);
  std::string name(method);
  auto timer = scheduler_.start_timer(timeout, [this, key, id, name, timeout] {
    if (tracing()) spdlog::trace("<-- (no reply) {}({}) after {} ms: cancelled", name, key, timeout.count());
    notify("$/cancelRequest", json{{"id", protocol::id_to_json(id)}});
    finish_call(key, CallOutcome{nullptr, RpcError{rpc_error::kRequestCancelled,
        "the client did not answer " + name + " within " + std::to_string(timeout.count()) + " ms", nullptr}});
  });
  calls_.emplace(key, PendingCall{name, timer, std::move(done), std::chrono::steady_clock::now()});
  if (tracing()) spdlog::trace("--> {}({})", name, key);
  outbox_->send(protocol::encode_request(id, method, params));
}

void Dispatcher::handle_response(protocol::Response&& response) {
  std::string key = protocol::id_to_string(response.id);
  auto it = calls_.find(key);
  if (it == calls_.end()) {
    spdlog::warn("reply to unknown request id {} ignored", key);
    return;
  }
  scheduler_.cancel_timer(it->second.timer);
  if (tracing()) spdlog::trace("<-- reply:{}({}) {} ms{}", it->second.method, key, ms_since(it->second.sent),
                error_tail(response.error ? &*response.error : nullptr));
  CallOutcome outcome;
  if (response.result) outcome.result = std::move(*response.result);
  outcome.error = std::move(response.error);
  finish_call(key, std::move(outcome));
}

void Dispatcher::finish_call(const std::string& key, CallOutcome outcome) {
  auto it = calls_.find(key);
  if (it == calls_.end()) return;
  CallHandler done = std::move(it->second.done);
  std::string method = std::move(it->second.method);
  calls_.erase(it);
  try {
    done(std::move(outcome));
  } catch (const std::exception& e) {
    spdlog::error("reply handler for {} threw: {}", method, e.what());
  } catch (...) {
    spdlog::error("reply handler for {} threw a non-standard exception", method);
  }
}

void Dispatcher::abandon_requests(const std::string& reason) {
  std::vector<std::shared_ptr<detail::ReplyState>> live;
  for (auto& [key, weak] : outbox_->in_flight)
    if (auto state = weak.lock()) live.push_back(std::move(state));
  for (auto& state : live) state->abandon(protocol::request_failed(kind::kUnavailable, reason));
}

void Dispatcher::fail_pending_calls(const std::string& reason) {
  while (!calls_.empty()) {
    auto it = calls_.begin();
    scheduler_.cancel_timer(it->second.timer);
    finish_call(it->first, CallOutcome{nullptr, protocol::request_failed(kind::kUnavailable, reason)});
  }
}

}  // namespace lockroom::rpc
