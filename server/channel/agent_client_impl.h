// Internals shared by agent_client.cpp and agent_client_files.cpp: the per-process record and
// the one request helper every typed method goes through. Not for use outside AgentClient.
#pragma once

#include "server/channel/agent_client.h"

namespace lockroom::channel {

struct AgentClient::Proc {
  std::int64_t pid = 0;
  bool pty = false;
  wire::ProcessStreams streams;
  ProcessEvents events;
  bool exited = false;
  int open_outputs = 0;
  bool stdin_open = true;
  std::function<void()> on_writable;
};

inline Result<void> parse_empty(const json& result) {
  if (result.is_object() && result.empty()) return {};
  return make_error(ErrorCode::kInvalidInput, "the result must be an empty object");
}

// Sends one request; an error answer becomes a lockroom Error, a result that does not parse
// fails the channel (a lying agent) and reports kUnavailable.
template <typename T>
void AgentClient::request(const char* method, const json& params, std::chrono::milliseconds timeout,
                          std::function<Result<T>(const json&)> parse, Done<T> done) {
  std::weak_ptr<bool> alive = alive_;
  channel_.call(method, params, timeout, [this, alive, method, parse = std::move(parse), done = std::move(done)](rpc::CallOutcome outcome) {
    if (alive.expired()) return;
    if (outcome.error) return done(agent_error_to_result(method, *outcome.error));
    Result<T> parsed = parse(outcome.result);
    if (!parsed) {
      std::string why = std::string("malformed reply to ") + method + ": " + parsed.error().message;
      channel_.fail(why);
      return done(make_error(ErrorCode::kUnavailable, why));
    }
    done(std::move(parsed));
  });
}


}  // namespace lockroom::channel
