// Shared by the dispatcher tests (test_dispatcher_*.cpp): a Dispatcher under a manual clock with
// every message it sends captured, and builders for the messages an editor sends.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "server/rpc/dispatcher.h"
#include "tests/fakes/manual_scheduler.h"

namespace lockroom::testing::dispatcher {

using lockroom::rpc::CallOutcome;
using lockroom::rpc::Dispatcher;
using lockroom::rpc::GateDecision;
using lockroom::rpc::Reply;
using lockroom::testing::ManualScheduler;
using lockroom::protocol::Id;
using lockroom::protocol::json;
using lockroom::protocol::RpcError;
namespace codes = lockroom::protocol::rpc_error;
using ms = std::chrono::milliseconds;

inline json request(const json& id, const std::string& method, const json& params = nullptr) {
  json m{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null()) m["params"] = params;
  return m;
}

inline json notification(const std::string& method, const json& params = nullptr) {
  json m{{"jsonrpc", "2.0"}, {"method", method}};
  if (!params.is_null()) m["params"] = params;
  return m;
}

inline json cancel(const json& id) { return notification("$/cancelRequest", json{{"id", id}}); }

inline json result_reply(const json& id, const json& result) { return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", result}}; }

struct Harness {
  explicit Harness(std::size_t max_calls = Dispatcher::kDefaultMaxPendingCalls)
      : dispatcher(std::make_unique<Dispatcher>([this](std::string m) { sent.push_back(std::move(m)); }, clock, max_calls)) {}

  Dispatcher& d() { return *dispatcher; }
  void in(const json& message) { dispatcher->handle_message(message.dump()); }
  // Every message sent since the last take(), parsed (strictly: invalid UTF-8 would throw).
  std::vector<json> take() {
    std::vector<json> out;
    for (const auto& text : sent) out.push_back(json::parse(text));
    sent.clear();
    return out;
  }
  json take_one() {
    auto all = take();
    INFO("messages sent: " << json(all).dump());
    REQUIRE(all.size() == 1);
    return all[0];
  }

  ManualScheduler clock;
  std::vector<std::string> sent;
  std::unique_ptr<Dispatcher> dispatcher;
};

inline int error_code(const json& reply) { return reply.at("error").at("code").get<int>(); }
inline std::string error_message(const json& reply) { return reply.at("error").at("message").get<std::string>(); }
inline bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace lockroom::testing::dispatcher
