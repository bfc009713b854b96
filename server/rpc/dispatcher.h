// Dispatcher: message texts in, handler calls out, with JSON-RPC's guarantees enforced in one place.
//
// - Every request gets exactly one reply. A handler receives a Reply handle; when the last copy
//   of it is destroyed without a reply, the dispatcher answers -32603 itself. A second reply is a
//   bug: it is dropped, logged and counted (tests assert the count stays zero).
// - `$/cancelRequest` answers the named request with -32800 at once; the handler's own later
//   reply is then dropped quietly, and it can stop early via Reply::on_cancel / cancelled().
//   A handler whose work cannot always stop takes the answer over (on_cancel_answer_myself):
//   it then answers -32800 only when it really stopped, and its real result otherwise.
// - A gate (installed by the face: LSP lifecycle, ACP) decides per method whether a message may
//   pass in the current state.
// - Calls from server to client (`call`) wait in a bounded table with a timeout each; replies
//   with unknown ids are logged and ignored.
// - Every -32803 it makes carries `data.kind` (protocol::failure_kind).
// - At log level trace, every message in and out is logged in clangd's style, with the time a
//   request took: `<-- sandbox/create(3)`, `--> reply:sandbox/create(3) 142 ms`, `--> $/progress`,
//   `--> network/approve(1)`, `<-- reply:network/approve(1) 850 ms`.
// Single-threaded: everything runs on the loop thread. Nothing here throws to the caller.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "protocol/jsonrpc.h"
#include "server/rpc/scheduler.h"

namespace lockroom::rpc {

using protocol::Id;
using protocol::json;
using protocol::RpcError;

namespace detail {
struct ReplyState;
struct Outbox;
}  // namespace detail

// The one way to answer a request. Cheap to copy; all copies share one reply slot.
class Reply {
 public:
  void result(json value) const;
  void error(RpcError error) const;
  void error(int code, std::string message) const { error(RpcError{code, std::move(message), nullptr}); }
  bool replied() const;
  bool cancelled() const;
  // Runs `fn` if the client cancels this request before it is answered (at once if it already has).
  // The dispatcher answers the request with -32800 at once.
  void on_cancel(std::function<void()> fn) const;
  // For work that cannot always stop (a write that has begun must finish): on $/cancelRequest
  // `fn` runs and the dispatcher does NOT answer. The handler answers itself: -32800 when it
  // stopped before doing anything, else its real result. cancelled() is true from then on.
  // Replaces any on_cancel callbacks' immediate answer for this request.
  void on_cancel_answer_myself(std::function<void()> fn) const;
  const Id& id() const;
  const std::string& method() const;

 private:
  friend class Dispatcher;
  explicit Reply(std::shared_ptr<detail::ReplyState> state) : state_(std::move(state)) {}
  std::shared_ptr<detail::ReplyState> state_;
};

// Handlers own their params (the dispatcher is done with them), so they can move from them.
using RequestHandler = std::function<void(json params, Reply reply)>;
using NotificationHandler = std::function<void(const json& params)>;

// The outcome of a call to the client: a result, or the error it answered (or that we made up
// on timeout, cancellation or overflow).
struct CallOutcome {
  json result;
  std::optional<RpcError> error;
};
using CallHandler = std::function<void(CallOutcome outcome)>;

struct GateDecision {
  bool allow = true;
  RpcError error;  // sent for a refused request; a refused notification is dropped
  static GateDecision pass() { return {}; }
  static GateDecision refuse(int code, std::string message) { return {false, RpcError{code, std::move(message), nullptr}}; }
};
using Gate = std::function<GateDecision(std::string_view method, bool is_request)>;

struct DispatcherStats {
  std::uint64_t double_replies = 0;   // replies after the first: always a bug
  std::uint64_t dropped_replies = 0;  // handlers that let go of a request without answering
  std::uint64_t cancelled = 0;
};

class Dispatcher {
 public:
  using Send = std::function<void(std::string message)>;
  static constexpr std::size_t kDefaultMaxPendingCalls = 256;

  Dispatcher(Send send, Scheduler& scheduler, std::size_t max_pending_calls = kDefaultMaxPendingCalls);
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  void on_request(std::string method, RequestHandler handler);
  void on_notification(std::string method, NotificationHandler handler);
  // The names of every request method with a handler, sorted: what `initialize` advertises.
  std::vector<std::string> request_methods() const;
  void set_gate(Gate gate) { gate_ = std::move(gate); }

  // One frame's text from the peer.
  void handle_message(std::string_view text);
  // A framing problem: answered with an error carrying a null id.
  void handle_framing_error(const std::string& description);

  void notify(std::string_view method, const json& params);
  // Sends a request to the client; `done` runs once, with its answer or an error.
  void call(std::string_view method, const json& params, std::chrono::milliseconds timeout, CallHandler done);
  // Fails every outstanding call (used at shutdown); each `done` runs with `reason`.
  void fail_pending_calls(const std::string& reason);
  // Answers every request still being worked on with -32803 `reason` (used at shutdown); the
  // handlers' own later replies are dropped quietly.
  void abandon_requests(const std::string& reason);

  std::size_t pending_calls() const { return calls_.size(); }
  std::size_t requests_in_flight() const;
  const DispatcherStats& stats() const;

 private:
  struct PendingCall {
    std::string method;
    Scheduler::TimerId timer;
    CallHandler done;
    std::chrono::steady_clock::time_point sent;
  };
  void dispatch_request(protocol::Request&& request);
  void dispatch_notification(protocol::Notification&& notification);
  void handle_response(protocol::Response&& response);
  void cancel_incoming(const json& params);
  void finish_call(const std::string& key, CallOutcome outcome);

  std::shared_ptr<detail::Outbox> outbox_;
  Scheduler& scheduler_;
  std::size_t max_pending_calls_;
  Gate gate_;
  std::unordered_map<std::string, RequestHandler> requests_;
  std::unordered_map<std::string, NotificationHandler> notifications_;
  std::unordered_map<std::string, PendingCall> calls_;
  std::int64_t next_call_id_ = 1;
};

}  // namespace lockroom::rpc
