// Dispatcher (server/rpc/dispatcher.h): $/cancelRequest, ids reused while in flight, requests
// abandoned at shutdown, and what a Reply holds after it is answered.
#include <catch2/catch.hpp>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tests/unit/test_dispatcher_harness.h"

using namespace lockroom::testing::dispatcher;

// ---------------------------------------------------------------- cancellation

TEST_CASE("dispatcher: $/cancelRequest answers -32800 once and runs the cancel callbacks", "[dispatcher]") {
  Harness h;
  std::vector<Reply> kept;
  int first = 0, second = 0;
  h.d().on_request("slow", [&](const json&, Reply reply) {
    reply.on_cancel([&] { ++first; });
    reply.on_cancel([&] { ++second; });
    kept.push_back(reply);
  });
  h.in(request(7, "slow"));
  CHECK(h.take().empty());
  h.in(cancel(7));
  json reply = h.take_one();
  CHECK(reply["id"] == 7);
  CHECK(error_code(reply) == codes::kRequestCancelled);
  CHECK(has(error_message(reply), "slow"));
  CHECK(first == 1);
  CHECK(second == 1);
  CHECK(kept[0].cancelled());
  CHECK(kept[0].replied());
  CHECK(h.d().stats().cancelled == 1);
  CHECK(h.d().requests_in_flight() == 0);

  // The handler's own late reply is dropped quietly: it is not a double reply.
  kept[0].result("too late");
  kept[0].error(codes::kInternalError, "also too late");
  CHECK(h.take().empty());
  CHECK(h.d().stats().double_replies == 0);

  // A second cancel finds nothing to do; letting go of the reply sends nothing either.
  h.in(cancel(7));
  kept.clear();
  CHECK(h.take().empty());
  CHECK(first == 1);
  CHECK(h.d().stats().cancelled == 1);
  CHECK(h.d().stats().dropped_replies == 0);
}

TEST_CASE("dispatcher: on_cancel after the cancel runs at once, after a reply never", "[dispatcher]") {
  Harness h;
  std::vector<Reply> kept;
  h.d().on_request("slow", [&](const json&, Reply reply) { kept.push_back(reply); });
  h.in(request(1, "slow"));
  h.in(request(2, "slow"));
  h.in(cancel(1));
  h.take();
  int ran = 0;
  kept[0].on_cancel([&] { ++ran; });
  CHECK(ran == 1);
  kept[1].result("ok");
  kept[1].on_cancel([&] { ++ran; });
  h.in(cancel(2));
  CHECK(ran == 1);
  CHECK(h.take() == std::vector<json>{result_reply(2, "ok")});
}

TEST_CASE("dispatcher: a cancel callback may reply or throw without harm", "[dispatcher]") {
  Harness h;
  int after = 0;
  h.d().on_request("slow", [&](const json&, Reply reply) {
    reply.on_cancel([reply] { reply.result("from the cancel callback"); });
    reply.on_cancel([] { throw std::runtime_error("callback failure"); });
    reply.on_cancel([&] { ++after; });
  });
  // The handler kept no copy, so the reply was dropped at once... unless a callback holds it:
  // here the first callback holds a copy, so the request stays in flight.
  h.in(request(1, "slow"));
  CHECK(h.take().empty());
  REQUIRE_NOTHROW(h.in(cancel(1)));
  json reply = h.take_one();
  CHECK(error_code(reply) == codes::kRequestCancelled);
  CHECK(after == 1);
  CHECK(h.d().stats().double_replies == 0);
}

TEST_CASE("dispatcher: cancelling an unknown, answered or malformed id does nothing", "[dispatcher]") {
  Harness h;
  h.d().on_request("echo", [](const json& p, Reply reply) { reply.result(p); });
  std::vector<Reply> kept;
  h.d().on_request("slow", [&](const json&, Reply reply) { kept.push_back(reply); });
  h.in(request(1, "echo"));
  h.take();
  h.in(request(2, "slow"));
  h.in(cancel(1));                    // answered already
  h.in(cancel(99));                   // never seen
  h.in(cancel("2"));                  // a string is not the integer 2
  h.in(cancel(json::array({2})));     // not an id
  h.in(cancel(nullptr));              // not an id
  h.in(notification("$/cancelRequest"));                       // no params
  h.in(notification("$/cancelRequest", json::array({2})));     // params not an object
  CHECK(h.take().empty());
  CHECK(h.d().stats().cancelled == 0);
  CHECK_FALSE(kept[0].cancelled());
  h.in(cancel(2));
  CHECK(error_code(h.take_one()) == codes::kRequestCancelled);
}

TEST_CASE("dispatcher: string ids are cancelled by the same string", "[dispatcher]") {
  Harness h;
  std::vector<Reply> kept;
  h.d().on_request("slow", [&](const json&, Reply reply) { kept.push_back(reply); });
  h.in(request("7", "slow"));
  h.in(cancel(7));
  CHECK(h.take().empty());
  h.in(cancel("7"));
  json reply = h.take_one();
  CHECK(reply["id"] == "7");
  CHECK(error_code(reply) == codes::kRequestCancelled);
}

// ---------------------------------------------------------------- duplicate ids

TEST_CASE("dispatcher: a request reusing an id still in flight is -32600 and the first is answered once", "[dispatcher]") {
  Harness h;
  std::vector<Reply> kept;
  int calls = 0;
  h.d().on_request("slow", [&](const json&, Reply reply) {
    ++calls;
    kept.push_back(reply);
  });
  h.in(request(1, "slow"));
  h.in(request(1, "slow"));
  json dup = h.take_one();
  CHECK(dup["id"] == 1);
  CHECK(error_code(dup) == codes::kInvalidRequest);
  CHECK(has(error_message(dup), "already in use"));
  CHECK(calls == 1);
  CHECK(h.d().requests_in_flight() == 1);

  // The integer 1 and the string "1" are different ids.
  h.in(request("1", "slow"));
  CHECK(h.take().empty());
  CHECK(calls == 2);

  kept[0].result("first");
  CHECK(h.take_one() == result_reply(1, "first"));
  // Once answered, the id may be used again.
  h.in(request(1, "slow"));
  CHECK(calls == 3);
  CHECK(h.take().empty());
  kept[2].result("third");
  kept[1].result("second");
  CHECK(h.take() == std::vector<json>{result_reply(1, "third"), result_reply("1", "second")});
  CHECK(h.d().stats().double_replies == 0);
}

TEST_CASE("dispatcher: [bug] cancel callbacks are released once the request is answered", "[dispatcher][bug]") {
  // A natural handler shape: an operation object holds the Reply and registers a cancel callback
  // that holds the operation. ReplyState keeps its cancel callbacks after a normal reply, so
  // state -> callback -> operation -> Reply -> state is a cycle and every such request leaks.
  // Once answered, a request can no longer be cancelled: the callbacks should be let go.
  Harness h;
  struct Operation {
    explicit Operation(Reply r) : reply(std::move(r)) {}
    Reply reply;
  };
  std::weak_ptr<Operation> watch;
  h.d().on_request("op", [&](const json&, Reply reply) {
    auto op = std::make_shared<Operation>(reply);
    reply.on_cancel([op] { (void)op; });
    watch = op;
    op->reply.result("done");
  });
  h.in(request(1, "op"));
  CHECK(h.take_one() == result_reply(1, "done"));
  CHECK(watch.expired());
}

TEST_CASE("dispatcher: abandon_requests answers each request in flight -32803 once, and late replies are quiet",
          "[dispatcher]") {
  Harness h;
  std::vector<Reply> kept;
  int cancel_callbacks = 0;
  h.d().on_request("slow", [&](const json&, Reply reply) {
    reply.on_cancel([&] { ++cancel_callbacks; });
    kept.push_back(reply);
  });
  h.d().on_request("echo", [](const json& p, Reply reply) { reply.result(p); });
  h.in(request(1, "slow"));
  h.in(request("two", "slow"));
  h.in(request(3, "echo"));
  h.take();
  h.d().abandon_requests("the server is shutting down");
  auto sent = h.take();
  REQUIRE(sent.size() == 2);
  std::set<std::string> ids;
  for (const json& m : sent) {
    ids.insert(m["id"].dump());
    CHECK(error_code(m) == codes::kRequestFailed);
    CHECK(error_message(m) == "the server is shutting down");
    CHECK(m["error"]["data"] == json{{"kind", "unavailable"}});  // every -32803 says its kind
  }
  CHECK(ids == std::set<std::string>{"1", "\"two\""});
  CHECK(h.d().requests_in_flight() == 0);
  kept[0].result("late");
  kept[1].error(codes::kInternalError, "late");
  h.in(cancel(1));
  kept.clear();
  CHECK(h.take().empty());
  CHECK(h.d().stats().double_replies == 0);
  CHECK(h.d().stats().dropped_replies == 0);
  h.d().abandon_requests("again");
  CHECK(h.take().empty());
}

TEST_CASE("dispatcher: a handler that answers its own cancel is not answered -32800 for it", "[dispatcher]") {
  Harness h;
  std::vector<Reply> kept;
  int told = 0;
  h.d().on_request("write", [&](const json&, Reply reply) {
    reply.on_cancel_answer_myself([&] { ++told; });
    kept.push_back(reply);
  });
  h.in(request(1, "write"));
  h.in(request(2, "write"));
  h.in(cancel(1));
  h.in(cancel(2));
  CHECK(h.take().empty());  // nothing yet: each handler decides
  CHECK(told == 2);
  CHECK(kept[0].cancelled());
  CHECK_FALSE(kept[0].replied());
  CHECK(h.d().stats().cancelled == 2);

  // The first was past its point of no return: its real result goes out.
  kept[0].result("written");
  json first = h.take_one();
  CHECK(first["id"] == 1);
  CHECK(first["result"] == "written");
  // The second stopped in time and says so.
  kept[1].error(codes::kRequestCancelled, "stopped before any write");
  json second = h.take_one();
  CHECK(second["id"] == 2);
  CHECK(error_code(second) == codes::kRequestCancelled);
  CHECK(h.d().stats().double_replies == 0);

  // A second cancel of a request already asked to stop runs nothing again.
  h.in(request(3, "write"));
  h.in(cancel(3));
  h.in(cancel(3));
  CHECK(told == 3);
  kept[2].result("done");
  CHECK(h.take_one()["result"] == "done");
}
