// LspLifecycle (server/rpc/lsp_lifecycle.h): the gate in every state, the exit codes, and the
// lifecycle driving a Dispatcher the way LspServer wires it.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "server/rpc/dispatcher.h"
#include "server/rpc/lsp_lifecycle.h"
#include "tests/fakes/manual_scheduler.h"

using lockroom::rpc::Dispatcher;
using lockroom::rpc::GateDecision;
using lockroom::rpc::LspLifecycle;
using lockroom::rpc::Reply;
using lockroom::protocol::json;
using State = lockroom::rpc::LspLifecycle::State;
namespace codes = lockroom::protocol::rpc_error;

namespace {

LspLifecycle in_state(State state) {
  LspLifecycle lifecycle;
  if (state != State::kUninitialized) lifecycle.initialized();
  if (state == State::kShutDown) lifecycle.shut_down();
  REQUIRE(lifecycle.state() == state);
  return lifecycle;
}

const char* name(State s) {
  switch (s) {
    case State::kUninitialized: return "uninitialized";
    case State::kRunning: return "running";
    case State::kShutDown: return "shut down";
  }
  return "?";
}

// "pass", "drop" (a refused notification) or the refusal's error code.
std::string verdict(const GateDecision& d, bool is_request) {
  if (d.allow) return "pass";
  if (!is_request) return "drop";
  return std::to_string(d.error.code);
}

}  // namespace

TEST_CASE("lsp lifecycle: starts uninitialized with exit code 1", "[lifecycle]") {
  LspLifecycle lifecycle;
  CHECK(lifecycle.state() == State::kUninitialized);
  CHECK(lifecycle.exit_code() == 1);
}

TEST_CASE("lsp lifecycle: the whole gate table", "[lifecycle]") {
  struct Row {
    State state;
    const char* method;
    bool is_request;
    std::string expected;
  };
  const std::string not_initialized = std::to_string(codes::kServerNotInitialized);
  const std::string invalid = std::to_string(codes::kInvalidRequest);
  const std::vector<Row> table = {
      // before initialize
      {State::kUninitialized, "initialize", true, "pass"},
      {State::kUninitialized, "shutdown", true, not_initialized},
      {State::kUninitialized, "sandbox/create", true, not_initialized},
      {State::kUninitialized, "lockroom/echo", true, not_initialized},
      {State::kUninitialized, "exit", false, "pass"},
      {State::kUninitialized, "initialized", false, "drop"},
      {State::kUninitialized, "$/cancelRequest", false, "drop"},
      {State::kUninitialized, "anything/else", false, "drop"},
      // running
      {State::kRunning, "initialize", true, invalid},
      {State::kRunning, "shutdown", true, "pass"},
      {State::kRunning, "sandbox/create", true, "pass"},
      {State::kRunning, "no/such/method", true, "pass"},  // the dispatcher answers -32601 later
      {State::kRunning, "exit", false, "pass"},
      {State::kRunning, "initialized", false, "pass"},
      {State::kRunning, "$/cancelRequest", false, "pass"},
      {State::kRunning, "anything/else", false, "pass"},
      // after shutdown
      {State::kShutDown, "initialize", true, invalid},
      {State::kShutDown, "shutdown", true, invalid},
      {State::kShutDown, "sandbox/create", true, invalid},
      {State::kShutDown, "exit", false, "pass"},
      {State::kShutDown, "initialized", false, "drop"},
      {State::kShutDown, "$/cancelRequest", false, "drop"},
      {State::kShutDown, "anything/else", false, "drop"},
  };
  for (const Row& row : table) {
    LspLifecycle lifecycle = in_state(row.state);
    INFO(name(row.state) << " / " << row.method << (row.is_request ? " (request)" : " (notification)"));
    CHECK(verdict(lifecycle.gate(row.method, row.is_request), row.is_request) == row.expected);
  }
}

TEST_CASE("lsp lifecycle: refusals say what to do", "[lifecycle]") {
  auto early = in_state(State::kUninitialized).gate("sandbox/list", true);
  CHECK(early.error.message == "server not initialized: send \"initialize\" before \"sandbox/list\"");
  auto twice = in_state(State::kRunning).gate("initialize", true);
  CHECK(twice.error.message == "invalid request: \"initialize\" may be sent only once");
  auto late = in_state(State::kShutDown).gate("sandbox/list", true);
  CHECK(late.error.message.find("shutting down") != std::string::npos);
  CHECK(late.error.message.find("\"exit\"") != std::string::npos);
}

TEST_CASE("lsp lifecycle: exit code is 0 only after shutdown", "[lifecycle]") {
  CHECK(in_state(State::kUninitialized).exit_code() == 1);
  CHECK(in_state(State::kRunning).exit_code() == 1);
  CHECK(in_state(State::kShutDown).exit_code() == 0);
}

TEST_CASE("lsp lifecycle: a whole session through a dispatcher", "[lifecycle][dispatcher]") {
  lockroom::testing::ManualScheduler clock;
  std::vector<json> sent;
  Dispatcher d([&](std::string m) { sent.push_back(json::parse(m)); }, clock);
  LspLifecycle lifecycle;
  std::vector<int> exits;
  d.set_gate([&](std::string_view method, bool is_request) { return lifecycle.gate(method, is_request); });
  d.on_request("initialize", [&](const json&, Reply reply) {
    lifecycle.initialized();
    reply.result(json{{"capabilities", json::object()}});
  });
  d.on_request("shutdown", [&](const json&, Reply reply) {
    lifecycle.shut_down();
    reply.result(nullptr);
  });
  d.on_request("lockroom/echo", [](const json& p, Reply reply) { reply.result(p); });
  d.on_notification("exit", [&](const json&) { exits.push_back(lifecycle.exit_code()); });
  auto req = [&](int id, const std::string& method) {
    d.handle_message(json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", {{"n", id}}}}.dump());
  };
  auto code_of = [&](std::size_t i) { return sent.at(i).at("error").at("code").get<int>(); };

  req(1, "lockroom/echo");
  CHECK(code_of(0) == codes::kServerNotInitialized);
  req(2, "initialize");
  CHECK(sent.at(1)["result"] == json{{"capabilities", json::object()}});
  req(3, "initialize");
  CHECK(code_of(2) == codes::kInvalidRequest);
  req(4, "lockroom/echo");
  CHECK(sent.at(3)["result"] == json{{"n", 4}});
  req(5, "shutdown");
  CHECK(sent.at(4)["result"].is_null());
  req(6, "lockroom/echo");
  CHECK(code_of(5) == codes::kInvalidRequest);
  d.handle_message(R"({"jsonrpc":"2.0","method":"exit"})");
  CHECK(exits == std::vector<int>{0});
  CHECK(sent.size() == 6);
  CHECK(d.stats().dropped_replies == 0);
}

TEST_CASE("lsp lifecycle: exit without shutdown reports 1", "[lifecycle][dispatcher]") {
  lockroom::testing::ManualScheduler clock;
  Dispatcher d([](std::string) {}, clock);
  LspLifecycle lifecycle;
  std::vector<int> exits;
  d.set_gate([&](std::string_view method, bool is_request) { return lifecycle.gate(method, is_request); });
  d.on_notification("exit", [&](const json&) { exits.push_back(lifecycle.exit_code()); });
  d.handle_message(R"({"jsonrpc":"2.0","method":"exit"})");
  lifecycle.initialized();
  d.handle_message(R"({"jsonrpc":"2.0","method":"exit"})");
  CHECK(exits == std::vector<int>{1, 1});
}
