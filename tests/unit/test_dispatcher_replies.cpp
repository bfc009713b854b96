// Dispatcher (server/rpc/dispatcher.h): exactly one reply per request (dropped, doubled and thrown
// replies), unknown methods, invalid messages, notifications, and the gate.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "tests/unit/test_dispatcher_harness.h"

using namespace lockroom::testing::dispatcher;

// ---------------------------------------------------------------- exactly one reply

TEST_CASE("dispatcher: a handler's result is sent once with the request's id", "[dispatcher]") {
  Harness h;
  h.d().on_request("echo", [](const json& params, Reply reply) { reply.result(params); });
  h.in(request(1, "echo", {{"text", "hi"}}));
  CHECK(h.take_one() == result_reply(1, {{"text", "hi"}}));
  h.in(request("abc", "echo", json::array({1})));
  CHECK(h.take_one() == result_reply("abc", json::array({1})));
  CHECK(h.d().requests_in_flight() == 0);
  CHECK(h.d().stats().double_replies == 0);
  CHECK(h.d().stats().dropped_replies == 0);
}

TEST_CASE("dispatcher: a Reply knows its id and method, and whether it was answered", "[dispatcher]") {
  Harness h;
  std::vector<Reply> kept;
  h.d().on_request("slow", [&](const json&, Reply reply) { kept.push_back(reply); });
  h.in(request("r-1", "slow"));
  REQUIRE(kept.size() == 1);
  CHECK(kept[0].id() == Id{std::string("r-1")});
  CHECK(kept[0].method() == "slow");
  CHECK_FALSE(kept[0].replied());
  CHECK(h.take().empty());
  CHECK(h.d().requests_in_flight() == 1);
  kept[0].error(-32803, "no");
  CHECK(kept[0].replied());
  json reply = h.take_one();
  CHECK(reply["id"] == "r-1");
  CHECK(error_code(reply) == -32803);
  CHECK(error_message(reply) == "no");
  CHECK(h.d().requests_in_flight() == 0);
}

TEST_CASE("dispatcher: a handler that drops its reply gets -32603 sent for it, once", "[dispatcher]") {
  Harness h;
  h.d().on_request("drop", [](const json&, Reply) {});
  h.in(request(5, "drop"));
  json reply = h.take_one();
  CHECK(reply["id"] == 5);
  CHECK(error_code(reply) == codes::kInternalError);
  CHECK(has(error_message(reply), "drop finished without a reply"));
  CHECK(h.d().stats().dropped_replies == 1);
  CHECK(h.d().requests_in_flight() == 0);
  CHECK(h.take().empty());
}

TEST_CASE("dispatcher: a reply dropped later, by the last copy going away, is answered then", "[dispatcher]") {
  Harness h;
  std::vector<Reply> kept;
  h.d().on_request("later", [&](const json&, Reply reply) {
    kept.push_back(reply);
    kept.push_back(reply);  // two copies share one slot
  });
  h.in(request(1, "later"));
  CHECK(h.take().empty());
  kept.pop_back();
  CHECK(h.take().empty());  // one copy still holds it
  kept.clear();
  json reply = h.take_one();
  CHECK(reply["id"] == 1);
  CHECK(error_code(reply) == codes::kInternalError);
  CHECK(h.d().stats().dropped_replies == 1);
}

TEST_CASE("dispatcher: a second reply is dropped and counted", "[dispatcher]") {
  Harness h;
  h.d().on_request("double", [](const json&, Reply reply) {
    reply.result("first");
    reply.result("second");
  });
  h.d().on_request("result-then-error", [](const json&, Reply reply) {
    reply.result(1);
    reply.error(codes::kInternalError, "late");
  });
  h.in(request(1, "double"));
  CHECK(h.take_one() == result_reply(1, "first"));
  CHECK(h.d().stats().double_replies == 1);
  h.in(request(2, "result-then-error"));
  CHECK(h.take_one() == result_reply(2, 1));
  CHECK(h.d().stats().double_replies == 2);
  CHECK(h.d().stats().dropped_replies == 0);
}

TEST_CASE("dispatcher: a handler that throws gets -32603 naming the failure", "[dispatcher]") {
  Harness h;
  h.d().on_request("throw", [](const json&, Reply) { throw std::runtime_error("deliberate failure"); });
  h.d().on_request("reply-then-throw", [](const json&, Reply reply) {
    reply.result("done");
    throw std::logic_error("after the fact");
  });
  REQUIRE_NOTHROW(h.in(request(1, "throw")));
  json reply = h.take_one();
  CHECK(reply["id"] == 1);
  CHECK(error_code(reply) == codes::kInternalError);
  CHECK(has(error_message(reply), "deliberate failure"));
  CHECK(h.d().stats().dropped_replies == 0);

  REQUIRE_NOTHROW(h.in(request(2, "reply-then-throw")));
  CHECK(h.take_one() == result_reply(2, "done"));
  CHECK(h.d().stats().double_replies == 0);
}

TEST_CASE("dispatcher: [bug] a handler that throws something that is not a std::exception does not escape",
          "[dispatcher][bug]") {
  // dispatcher.h: "Nothing here throws to the caller." Only std::exception is caught, so any other
  // exception unwinds out of handle_message and, in the server, out of a libuv callback.
  Harness h;
  h.d().on_request("throw-int", [](const json&, Reply) { throw 42; });
  CHECK_NOTHROW(h.in(request(1, "throw-int")));
  auto all = h.take();
  REQUIRE(all.size() == 1);
  CHECK(error_code(all[0]) == codes::kInternalError);
}

TEST_CASE("dispatcher: an unknown method is -32601 naming it", "[dispatcher]") {
  Harness h;
  h.in(request(3, "no/such"));
  json reply = h.take_one();
  CHECK(reply["id"] == 3);
  CHECK(error_code(reply) == codes::kMethodNotFound);
  CHECK(error_message(reply) == "unknown method \"no/such\"");
  CHECK(h.d().stats().dropped_replies == 0);
}

TEST_CASE("dispatcher: invalid messages and framing errors are answered with the error they deserve", "[dispatcher]") {
  Harness h;
  h.d().handle_message("{not json");
  json parse = h.take_one();
  CHECK(parse["id"].is_null());
  CHECK(error_code(parse) == codes::kParseError);
  h.in(json{{"jsonrpc", "1.0"}, {"id", 4}, {"method", "m"}});
  json version = h.take_one();
  CHECK(version["id"] == 4);
  CHECK(error_code(version) == codes::kInvalidRequest);
  h.d().handle_framing_error("invalid header: the Content-Length header is missing");
  json framing = h.take_one();
  CHECK(framing["id"].is_null());
  CHECK(error_code(framing) == codes::kParseError);
  CHECK(error_message(framing) == "invalid header: the Content-Length header is missing");
}

TEST_CASE("dispatcher: notifications reach their handler with params, and unknown ones are ignored", "[dispatcher]") {
  Harness h;
  std::vector<json> seen;
  h.d().on_notification("note", [&](const json& params) { seen.push_back(params); });
  h.d().on_notification("boom", [](const json&) { throw std::runtime_error("notification failure"); });
  h.in(notification("note", {{"a", 1}}));
  h.in(notification("unknown/thing", {{"a", 2}}));
  REQUIRE_NOTHROW(h.in(notification("boom")));
  CHECK(seen == std::vector<json>{json{{"a", 1}}});
  CHECK(h.take().empty());
}

TEST_CASE("dispatcher: notify() sends a notification", "[dispatcher]") {
  Harness h;
  h.d().notify("window/logMessage", {{"type", 3}, {"message", "hi"}});
  CHECK(h.take_one() == notification("window/logMessage", {{"type", 3}, {"message", "hi"}}));
}

// ---------------------------------------------------------------- the gate

TEST_CASE("dispatcher: the gate refuses requests with its error and drops refused notifications", "[dispatcher]") {
  Harness h;
  std::vector<std::pair<std::string, bool>> asked;
  h.d().set_gate([&](std::string_view method, bool is_request) {
    asked.emplace_back(std::string(method), is_request);
    if (method.substr(0, 8) == "blocked/") return GateDecision::refuse(codes::kServerNotInitialized, "not yet");
    return GateDecision::pass();
  });
  int ran = 0;
  h.d().on_request("blocked/req", [&](const json&, Reply reply) { ++ran, reply.result(1); });
  h.d().on_request("open/req", [&](const json&, Reply reply) { ++ran, reply.result(2); });
  h.d().on_notification("blocked/note", [&](const json&) { ++ran; });
  h.d().on_notification("open/note", [&](const json&) { ++ran; });

  h.in(request(1, "blocked/req"));
  json refused = h.take_one();
  CHECK(refused["id"] == 1);
  CHECK(error_code(refused) == codes::kServerNotInitialized);
  CHECK(error_message(refused) == "not yet");
  CHECK(ran == 0);

  h.in(notification("blocked/note"));
  CHECK(h.take().empty());
  CHECK(ran == 0);

  h.in(request(2, "open/req"));
  CHECK(h.take_one() == result_reply(2, 2));
  h.in(notification("open/note"));
  CHECK(ran == 2);

  // The gate also sees methods nobody registered, and is asked before "method not found".
  h.in(request(3, "blocked/unregistered"));
  CHECK(error_code(h.take_one()) == codes::kServerNotInitialized);

  using Asked = std::vector<std::pair<std::string, bool>>;
  CHECK(asked == Asked{{"blocked/req", true}, {"blocked/note", false}, {"open/req", true}, {"open/note", false},
                       {"blocked/unregistered", true}});
  CHECK(h.d().stats().dropped_replies == 0);
}

TEST_CASE("dispatcher: a refused $/cancelRequest cancels nothing", "[dispatcher]") {
  Harness h;
  bool closed = false;
  h.d().set_gate([&](std::string_view method, bool) {
    return closed && method == "$/cancelRequest" ? GateDecision::refuse(0, "") : GateDecision::pass();
  });
  std::vector<Reply> kept;
  h.d().on_request("slow", [&](const json&, Reply reply) { kept.push_back(reply); });
  h.in(request(1, "slow"));
  closed = true;
  h.in(cancel(1));
  CHECK(h.take().empty());
  CHECK_FALSE(kept[0].cancelled());
  kept[0].result("still mine");
  CHECK(h.take_one() == result_reply(1, "still mine"));
}

TEST_CASE("dispatcher: [bug] a message with an overflowing number is answered -32700 and nothing throws",
          "[dispatcher][bug]") {
  Harness h;
  h.d().on_request("echo", [](const json& p, Reply reply) { reply.result(p); });
  CHECK_NOTHROW(h.d().handle_message(R"({"jsonrpc":"2.0","id":1,"method":"echo","params":{"n":1e999}})"));
  auto all = h.take();
  REQUIRE(all.size() == 1);
  CHECK(all[0]["id"].is_null());
  CHECK(error_code(all[0]) == codes::kParseError);
}

TEST_CASE("dispatcher: request_methods lists every bound request method, sorted, and no notification", "[dispatcher]") {
  Harness h;
  CHECK(h.d().request_methods().empty());
  h.d().on_request("sandbox/list", [](const json&, Reply reply) { reply.result(nullptr); });
  h.d().on_request("kit/validate", [](const json&, Reply reply) { reply.result(nullptr); });
  h.d().on_request("changes/apply", [](const json&, Reply reply) { reply.result(nullptr); });
  h.d().on_request("kit/validate", [](const json&, Reply reply) { reply.result(1); });  // rebound: still once
  h.d().on_notification("initialized", [](const json&) {});
  CHECK(h.d().request_methods() == std::vector<std::string>{"changes/apply", "kit/validate", "sandbox/list"});
}
