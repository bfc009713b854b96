// Built-in and test-mode methods; see builtin_methods.h.
#include "server/rpc/builtin_methods.h"

#include <memory>
#include <stdexcept>

#include "protocol/params.h"
#include "server/rpc/progress.h"

namespace lockroom::rpc {

void register_builtin_methods(Connection& connection) {
  connection.dispatcher().on_request("lockroom/echo", [](json params, Reply reply) { reply.result(std::move(params)); });
}

void register_test_methods(Connection& connection) {
  Dispatcher& d = connection.dispatcher();
  Connection* conn = &connection;

  d.on_request("test/dropReply", [](const json&, Reply) {});
  d.on_request("test/doubleReply", [](const json&, Reply reply) {
    reply.result("first");
    reply.result("second");
  });
  d.on_request("test/throw", [](const json&, Reply) { throw std::runtime_error("deliberate failure"); });
  d.on_request("test/stats", [conn](const json&, Reply reply) {
    const DispatcherStats& s = conn->dispatcher().stats();
    reply.result(json{{"doubleReplies", s.double_replies}, {"droppedReplies", s.dropped_replies}, {"cancelled", s.cancelled},
                      {"pendingCalls", conn->dispatcher().pending_calls()}});
  });

  // Answers {"waited": ms} after `ms` milliseconds, unless cancelled first.
  d.on_request("test/wait", [conn](const json& params, Reply reply) {
    protocol::ParamReader reader(params);
    auto ms = reader.integer("ms", true, 0, 600000);
    if (!reader.ok()) return reply.error(reader.error());
    auto timer = conn->scheduler().start_timer(std::chrono::milliseconds(*ms), [reply, ms] {
      reply.result(json{{"waited", *ms}});
    });
    reply.on_cancel([conn, timer] { conn->scheduler().cancel_timer(timer); });
  });

  // Reports `steps` progress steps under the request's workDoneToken, then answers.
  d.on_request("test/progress", [conn](const json& params, Reply reply) {
    protocol::ParamReader reader(params);
    auto steps = reader.integer("steps", true, 0, 100);
    if (!reader.ok()) return reply.error(reader.error());
    WorkDoneProgress progress(*conn, params);
    progress.begin("Testing progress", 0);
    for (int i = 1; i <= *steps; ++i) progress.report("step " + std::to_string(i), i * 100 / static_cast<int>(*steps));
    progress.end("done");
    reply.result(json{{"steps", *steps}});
  });

  d.on_request("test/logMessage", [conn](const json& params, Reply reply) {
    protocol::ParamReader reader(params);
    auto type = reader.integer("type", true, 1, 4);
    auto message = reader.string("message", true);
    if (!reader.ok()) return reply.error(reader.error());
    conn->log_message(static_cast<MessageType>(*type), *message);
    reply.result(nullptr);
  });

  // Sends `method` to the client and answers with what came back: {result} or {error}.
  d.on_request("test/callClient", [conn](const json& params, Reply reply) {
    protocol::ParamReader reader(params);
    auto method = reader.string("method", true);
    auto call_params = reader.any("params", false);
    auto timeout = reader.integer("timeoutMs", false, 1, 600000);
    if (!reader.ok()) return reply.error(reader.error());
    conn->dispatcher().call(*method, call_params.value_or(nullptr), std::chrono::milliseconds(timeout.value_or(30000)),
                            [reply](CallOutcome outcome) {
                              if (outcome.error)
                                reply.result(json{{"error", {{"code", outcome.error->code}, {"message", outcome.error->message}}}});
                              else
                                reply.result(json{{"result", outcome.result}});
                            });
  });
}

}  // namespace lockroom::rpc
