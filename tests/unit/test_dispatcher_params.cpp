// Dispatcher (server/rpc/dispatcher.h) and protocol::classify: handlers receive exactly the params
// that json::parse() builds, value and types alike, and malformed text gets json::parse()'s own
// error, whichever of classify's two readers (its fast path or json::parse) read the message.
// Checked on hand-picked inputs and on many mutations of them.
#include <catch2/catch.hpp>

#include <climits>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "tests/support/json_identical.h"
#include "tests/unit/test_dispatcher_harness.h"

using namespace lockroom::testing::dispatcher;
using lockroom::testing::identical;

namespace {

// What `message` must do, by json::parse(): reach the echo handler with these params (null when
// absent), reach no handler, or fail with this parse error.
struct Expected {
  bool reaches_echo = false;
  json params;
  std::string parse_error;
};

Expected reference(const std::string& message) {
  json m;
  try {
    m = json::parse(message);
  } catch (const json::exception& e) {
    return {false, nullptr, std::string("parse error: ") + e.what()};
  }
  if (!m.is_object() || m.value("jsonrpc", json()) != "2.0" || m.value("method", json()) != "echo") return {};
  auto id = m.find("id");
  if (id == m.end() || !(id->is_number_integer() || id->is_string())) return {};
  if (id->is_number_unsigned() && id->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) return {};
  auto params = m.find("params");
  if (params == m.end()) return {true, nullptr, ""};
  if (!params->is_object() && !params->is_array() && !params->is_null()) return {};
  return {true, *params, ""};
}

std::string request_text(const std::string& params_text) {
  return R"({"jsonrpc":"2.0","id":7,"method":"echo","params":)" + params_text + "}";
}

// Sends `message` through a dispatcher whose echo handler keeps its params, and checks what
// happened against json::parse().
void check_against_reference(const std::string& message) {
  Harness h;
  std::optional<json> received;
  h.d().on_request("echo", [&](json params, Reply reply) {
    received = params;
    reply.result(std::move(params));
  });
  h.d().handle_message(message);
  Expected want = reference(message);
  INFO("message: " << json(message).dump(-1, ' ', true, json::error_handler_t::replace));
  std::vector<json> sent = h.take();
  REQUIRE(sent.size() <= 1);
  if (!want.parse_error.empty()) {
    CHECK_FALSE(received);
    REQUIRE(sent.size() == 1);
    CHECK(error_code(sent[0]) == codes::kParseError);
    // The reply carries the text as JSON does: invalid UTF-8 it quotes is replaced with U+FFFD.
    CHECK(error_message(sent[0]) == json::parse(lockroom::protocol::dump(json(want.parse_error))).get<std::string>());
    return;
  }
  REQUIRE(received.has_value() == want.reaches_echo);
  if (received) {
    INFO("received " << received->dump() << ", json::parse gives " << want.params.dump());
    CHECK(identical(*received, want.params));
  }
}

const std::vector<std::string> kParams = {
    R"({"sandboxId":"sbx-3f9c2a7e51d04b8c","argv":["git","status","--porcelain=v2","--branch"],"cwd":"/workspace","env":{"GIT_PAGER":"cat","LANG":"C.UTF-8","TERM":"dumb"},"timeoutMs":30000,"n":17})",
    R"({"a":0,"b":-0,"c":-1,"d":18446744073709551615,"e":18446744073709551616,"f":-9223372036854775808,"g":-9223372036854775809})",
    R"({"float":1.5,"exp":1e3,"neg":-2.5E-3,"huge":1e999,"zero":0.0})",
    R"({"esc":"q\" b\\ s\/ \b\f\n\r\t","u":"\u00e9\ud83d\ude00","lone":"\udc00"})",
    "{\"utf8\":\"h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \x7f\"}",
    "{\"overlong\":\"\xc0\xaf\",\"surrogate\":\"\xed\xa0\x80\",\"big\":\"\xf4\x90\x80\x80\",\"cut\":\"\xe2\x82\"}",
    "{\"ctl\":\"a\x01\"}",
    R"({"dup":1,"dup":[true,false,null],"dup":{"x":{}}})",
    R"( [ 1 , [ [ ] ] , { } , "s" , true ] )",
    R"({"a":01})",
    R"({"a":1,})",
    R"({"a" 1})",
    R"([1 2])",
    R"(tru)",
    R"(nul)",
    R"("unterminated)",
    "{\"deep\":" + std::string(200, '[') + std::string(200, ']') + "}",  // deeper than the fast reader goes
};

}  // namespace

TEST_CASE("dispatcher: handlers get json::parse()'s params, types included, for hand-picked inputs", "[dispatcher][json]") {
  for (const std::string& params : kParams) check_against_reference(request_text(params));
  // Whole messages whose envelope itself is unusual.
  for (std::string message : {std::string("\xef\xbb\xbf") + request_text("[1]"), request_text("[1]") + " \n", request_text("[1]") + "x",
                              std::string(R"({"jsonrpc":"2.0","id":7,"id":8,"method":"echo","params":[2]})"), std::string("")})
    check_against_reference(message);
}

TEST_CASE("dispatcher: handlers get json::parse()'s params, or its error, for mutated inputs", "[dispatcher][json]") {
  // Bytes that matter to a JSON reader: structure, escapes, digits, and UTF-8 lead and
  // continuation bytes.
  static const std::string kAlphabet = std::string("{}[]:,\"\\/ -+.eE0129tfnlu\x01\x7f") + "\x80\xbf\xc2\xdf\xe0\xed\xef\xf0\xf4\xf5\xff";
  std::mt19937 random(20261130);
  int checked = 0;
  for (const std::string& seed : kParams) {
    for (int i = 0; i < 400; ++i) {
      std::string text = request_text(seed);
      int edits = 1 + static_cast<int>(random() % 3);
      for (int e = 0; e < edits; ++e) {
        std::size_t at = random() % (text.size() + 1);
        char byte = kAlphabet[random() % kAlphabet.size()];
        switch (random() % 3) {
          case 0: text.insert(text.begin() + static_cast<std::ptrdiff_t>(at), byte); break;
          case 1: if (at < text.size()) text[at] = byte; break;
          default: if (at < text.size()) text.erase(at, 1); break;
        }
      }
      check_against_reference(text);
      ++checked;
    }
  }
  CHECK(checked == static_cast<int>(kParams.size()) * 400);
}
