// JSON-RPC classification and encoding (protocol/jsonrpc.h).
#include <catch2/catch.hpp>

#include <string>

#include "protocol/jsonrpc.h"

using namespace lockroom::protocol;
namespace codes = lockroom::protocol::rpc_error;

namespace {

template <typename T>
T expect(const Message& m) {
  INFO("message variant index " << m.index());
  REQUIRE(std::holds_alternative<T>(m));
  return std::get<T>(m);
}

InvalidMessage invalid(std::string_view text) {
  INFO(text);
  return expect<InvalidMessage>(classify(text));
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

// ---------------------------------------------------------------- the four alternatives

TEST_CASE("jsonrpc: a request with an integer id, method and object params", "[jsonrpc]") {
  auto r = expect<Request>(classify(R"({"jsonrpc":"2.0","id":7,"method":"sandbox/create","params":{"a":[1,2]}})"));
  CHECK(r.id == Id{std::int64_t{7}});
  CHECK(r.method == "sandbox/create");
  CHECK(r.params == json{{"a", {1, 2}}});
}

TEST_CASE("jsonrpc: a request with a string id, array params, or no params", "[jsonrpc]") {
  auto a = expect<Request>(classify(R"({"id":"abc","method":"m","params":[1,"x"],"jsonrpc":"2.0"})"));
  CHECK(a.id == Id{std::string("abc")});
  CHECK(a.params == json::array({1, "x"}));
  auto b = expect<Request>(classify(R"({"jsonrpc":"2.0","id":-3,"method":"shutdown"})"));
  CHECK(b.id == Id{std::int64_t{-3}});
  CHECK(b.params.is_null());
  auto c = expect<Request>(classify(R"({"jsonrpc":"2.0","id":0,"method":"m","params":null})"));
  CHECK(c.params.is_null());
  auto d = expect<Request>(classify(R"({"jsonrpc":"2.0","id":"","method":""})"));
  CHECK(d.id == Id{std::string()});
  CHECK(d.method.empty());
}

TEST_CASE("jsonrpc: a notification has a method and no id", "[jsonrpc]") {
  auto n = expect<Notification>(classify(R"({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":4}})"));
  CHECK(n.method == "$/cancelRequest");
  CHECK(n.params == json{{"id", 4}});
  auto bare = expect<Notification>(classify(R"({"jsonrpc":"2.0","method":"exit"})"));
  CHECK(bare.method == "exit");
  CHECK(bare.params.is_null());
}

TEST_CASE("jsonrpc: a response carries a result (even null) or an error", "[jsonrpc]") {
  auto ok = expect<Response>(classify(R"({"jsonrpc":"2.0","id":3,"result":{"x":1}})"));
  CHECK(ok.id == Id{std::int64_t{3}});
  REQUIRE(ok.result.has_value());
  CHECK(*ok.result == json{{"x", 1}});
  CHECK_FALSE(ok.error.has_value());

  auto null_result = expect<Response>(classify(R"({"jsonrpc":"2.0","id":"s","result":null})"));
  CHECK(null_result.id == Id{std::string("s")});
  REQUIRE(null_result.result.has_value());
  CHECK(null_result.result->is_null());

  auto err = expect<Response>(
      classify(R"({"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"no such method","data":{"m":"x"}}})"));
  CHECK_FALSE(err.result.has_value());
  REQUIRE(err.error.has_value());
  CHECK(err.error->code == -32601);
  CHECK(err.error->message == "no such method");
  CHECK(err.error->data == json{{"m", "x"}});

  auto terse = expect<Response>(classify(R"({"jsonrpc":"2.0","id":5,"error":{"code":1}})"));
  REQUIRE(terse.error.has_value());
  CHECK(terse.error->code == 1);
  CHECK(terse.error->message.empty());
  CHECK(terse.error->data.is_null());
}

// ---------------------------------------------------------------- ids

TEST_CASE("jsonrpc: float ids, even integral ones, huge, object, array and boolean ids are invalid with a null reply id",
          "[jsonrpc]") {
  // An id must come back exactly as it was sent; 3.0 would come back as 3, so floats are refused.
  for (std::string id : {"3.0", "-2e3", "1.5", "-0.25", "1e300", "1e16", R"({"n":1})", "[1]", "true", "false"}) {
    auto m = invalid(R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":"m"})");
    INFO("id " << id);
    CHECK(m.error.code == codes::kInvalidRequest);
    CHECK_FALSE(m.id.has_value());
    CHECK(has(m.error.message, "\"id\" must be an integer"));
  }
  CHECK(invalid(R"({"jsonrpc":"2.0","id":1e1,"result":0})").error.code == codes::kInvalidRequest);
}

TEST_CASE("jsonrpc: a null id in a request is invalid", "[jsonrpc]") {
  auto m = invalid(R"({"jsonrpc":"2.0","id":null,"method":"m"})");
  CHECK(m.error.code == codes::kInvalidRequest);
  CHECK_FALSE(m.id.has_value());
  CHECK(has(m.error.message, "must not be null"));
}

TEST_CASE("jsonrpc: the largest int64 id is kept exactly", "[jsonrpc]") {
  auto r = expect<Request>(classify(R"({"jsonrpc":"2.0","id":9223372036854775807,"method":"m"})"));
  CHECK(r.id == Id{std::int64_t{9223372036854775807}});
  CHECK(id_to_string(r.id) == "9223372036854775807");
  auto n = expect<Request>(classify(R"({"jsonrpc":"2.0","id":-9223372036854775808,"method":"m"})"));
  CHECK(id_to_string(n.id) == "-9223372036854775808");
}

TEST_CASE("jsonrpc: an id above INT64_MAX is refused, never wrapped into a different id", "[jsonrpc]") {
  // nlohmann reads 18446744073709551615 as an unsigned integer; taken as int64 it would become
  // -1 and the reply would answer request -1 instead.
  for (std::string id : {"18446744073709551615", "9223372036854775808"}) {
    INFO("id " << id);
    auto bad = invalid(R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":"m"})");
    CHECK(bad.error.code == codes::kInvalidRequest);
    CHECK_FALSE(bad.id.has_value());
    CHECK(has(bad.error.message, id));
  }
}

TEST_CASE("jsonrpc: read_id accepts integers within int64 and strings only", "[jsonrpc]") {
  CHECK(read_id(json(5)) == std::optional<Id>(Id{std::int64_t{5}}));
  CHECK(read_id(json(-5)) == std::optional<Id>(Id{std::int64_t{-5}}));
  CHECK(read_id(json(std::uint64_t{9223372036854775807ull})) == std::optional<Id>(Id{std::int64_t{INT64_MAX}}));
  CHECK_FALSE(read_id(json(std::uint64_t{9223372036854775808ull})).has_value());
  CHECK(read_id(json("x")) == std::optional<Id>(Id{std::string("x")}));
  CHECK_FALSE(read_id(json(1.0)).has_value());
  CHECK_FALSE(read_id(json(nullptr)).has_value());
  CHECK_FALSE(read_id(json::array()).has_value());
}

TEST_CASE("jsonrpc: id_to_string and id_to_json keep integers and strings apart", "[jsonrpc]") {
  CHECK(id_to_string(Id{std::int64_t{7}}) == "7");
  CHECK(id_to_string(Id{std::string("7")}) == "\"7\"");
  CHECK(id_to_string(Id{std::string("a\"b")}) == R"("a\"b")");
  CHECK(id_to_json(Id{std::int64_t{-1}}) == json(-1));
  CHECK(id_to_json(Id{std::string("x")}) == json("x"));
}

// ---------------------------------------------------------------- invalid messages

TEST_CASE("jsonrpc: text that is not JSON is a -32700 parse error with a null id", "[jsonrpc]") {
  for (std::string text : {"", "{", "not json", R"({"jsonrpc":"2.0",})", "{} {}", "}", "'single'"}) {
    auto m = invalid(text);
    INFO("text '" << text << "'");
    CHECK(m.error.code == codes::kParseError);
    CHECK_FALSE(m.id.has_value());
    CHECK(has(m.error.message, "parse error"));
  }
}

TEST_CASE("jsonrpc: invalid UTF-8 in the text is a -32700 parse error", "[jsonrpc]") {
  for (std::string text : {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}",
                           "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"s\":\"\xc3\x28\"}}",
                           "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xed\xa0\x80\"}"}) {
    auto m = invalid(text);
    CHECK(m.error.code == codes::kParseError);
    CHECK_FALSE(m.id.has_value());
  }
}

TEST_CASE("jsonrpc: a batch (array) is refused as -32600", "[jsonrpc]") {
  auto m = invalid(R"([{"jsonrpc":"2.0","id":1,"method":"m"}])");
  CHECK(m.error.code == codes::kInvalidRequest);
  CHECK_FALSE(m.id.has_value());
  CHECK(has(m.error.message, "batch"));
  CHECK(invalid("[]").error.code == codes::kInvalidRequest);
}

TEST_CASE("jsonrpc: a JSON value that is not an object is -32600", "[jsonrpc]") {
  for (std::string text : {"5", "\"request\"", "null", "true"}) {
    auto m = invalid(text);
    CHECK(m.error.code == codes::kInvalidRequest);
    CHECK(has(m.error.message, "must be a JSON object"));
  }
}

TEST_CASE("jsonrpc: a missing or wrong jsonrpc member is -32600 that still names the id", "[jsonrpc]") {
  for (std::string version : {"", R"("jsonrpc":"1.0",)", R"("jsonrpc":2.0,)", R"("jsonrpc":null,)", R"("jsonrpc":"2.0 ",)"}) {
    auto m = invalid("{" + version + R"("id":9,"method":"m"})");
    INFO(version);
    CHECK(m.error.code == codes::kInvalidRequest);
    CHECK(m.id == std::optional<Id>(Id{std::int64_t{9}}));
    CHECK(has(m.error.message, "\"jsonrpc\" must be \"2.0\""));
  }
}

TEST_CASE("jsonrpc: a method that is not a string is -32600", "[jsonrpc]") {
  for (std::string method : {"1", "null", "[]", "{}"}) {
    auto m = invalid(R"({"jsonrpc":"2.0","id":"q","method":)" + method + "}");
    CHECK(m.error.code == codes::kInvalidRequest);
    CHECK(m.id == std::optional<Id>(Id{std::string("q")}));
    CHECK(has(m.error.message, "\"method\" must be a string"));
  }
}

TEST_CASE("jsonrpc: params that are not an object, array or null are -32600", "[jsonrpc]") {
  for (std::string params : {"1", "\"x\"", "true"}) {
    auto req = invalid(R"({"jsonrpc":"2.0","id":2,"method":"m","params":)" + params + "}");
    CHECK(req.error.code == codes::kInvalidRequest);
    CHECK(req.id == std::optional<Id>(Id{std::int64_t{2}}));
    CHECK(has(req.error.message, "\"params\" must be an object or an array"));
    auto note = invalid(R"({"jsonrpc":"2.0","method":"m","params":)" + params + "}");
    CHECK(note.error.code == codes::kInvalidRequest);
    CHECK_FALSE(note.id.has_value());
  }
}

TEST_CASE("jsonrpc: a message with neither method, result nor error is -32600", "[jsonrpc]") {
  auto m = invalid(R"({"jsonrpc":"2.0","id":1})");
  CHECK(m.error.code == codes::kInvalidRequest);
  CHECK(m.id == std::optional<Id>(Id{std::int64_t{1}}));
  CHECK(has(m.error.message, "needs \"method\", \"result\" or \"error\""));
  CHECK(invalid(R"({"jsonrpc":"2.0"})").error.code == codes::kInvalidRequest);
}

TEST_CASE("jsonrpc: a response with both result and error is -32600", "[jsonrpc]") {
  auto m = invalid(R"({"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"x"}})");
  CHECK(m.error.code == codes::kInvalidRequest);
  CHECK(has(m.error.message, "both \"result\" and \"error\""));
}

TEST_CASE("jsonrpc: a response without a usable id is -32600", "[jsonrpc]") {
  for (std::string text : {R"({"jsonrpc":"2.0","result":1})", R"({"jsonrpc":"2.0","id":null,"result":1})",
                           R"({"jsonrpc":"2.0","id":null,"error":{"code":1}})"}) {
    auto m = invalid(text);
    CHECK(m.error.code == codes::kInvalidRequest);
    CHECK_FALSE(m.id.has_value());
    CHECK(has(m.error.message, "no usable \"id\""));
  }
}

TEST_CASE("jsonrpc: an error member must be an object with an integer code", "[jsonrpc]") {
  for (std::string error : {"1", "\"bad\"", "{}", R"({"code":"1"})", R"({"code":1.5})", R"({"code":null})"}) {
    auto m = invalid(R"({"jsonrpc":"2.0","id":8,"error":)" + error + "}");
    INFO(error);
    CHECK(m.error.code == codes::kInvalidRequest);
    CHECK(m.id == std::optional<Id>(Id{std::int64_t{8}}));
    CHECK(has(m.error.message, "integer \"code\""));
  }
}

// ---------------------------------------------------------------- encoding

TEST_CASE("jsonrpc: encode_result and encode_error write complete replies", "[jsonrpc]") {
  CHECK(json::parse(encode_result(Id{std::int64_t{1}}, json{{"a", 1}})) ==
        json{{"jsonrpc", "2.0"}, {"id", 1}, {"result", {{"a", 1}}}});
  CHECK(json::parse(encode_result(Id{std::string("s")}, nullptr)) ==
        json{{"jsonrpc", "2.0"}, {"id", "s"}, {"result", nullptr}});
  CHECK(json::parse(encode_error(Id{std::int64_t{2}}, RpcError{-32601, "unknown method \"x\"", nullptr})) ==
        json{{"jsonrpc", "2.0"}, {"id", 2}, {"error", {{"code", -32601}, {"message", "unknown method \"x\""}}}});
  CHECK(json::parse(encode_error(std::nullopt, RpcError{-32700, "bad", json{{"at", 3}}})) ==
        json{{"jsonrpc", "2.0"}, {"id", nullptr}, {"error", {{"code", -32700}, {"message", "bad"}, {"data", {{"at", 3}}}}}});
}

TEST_CASE("jsonrpc: encode_request and encode_notification omit null params", "[jsonrpc]") {
  CHECK(json::parse(encode_request(Id{std::int64_t{5}}, "network/approve", json{{"host", "x"}})) ==
        json{{"jsonrpc", "2.0"}, {"id", 5}, {"method", "network/approve"}, {"params", {{"host", "x"}}}});
  CHECK_FALSE(json::parse(encode_request(Id{std::int64_t{5}}, "m", nullptr)).contains("params"));
  CHECK(json::parse(encode_notification("$/progress", json::array({1}))) ==
        json{{"jsonrpc", "2.0"}, {"method", "$/progress"}, {"params", {1}}});
  CHECK_FALSE(json::parse(encode_notification("exit", nullptr)).contains("params"));
}

TEST_CASE("jsonrpc: encoding strings that are not valid UTF-8 does not throw and yields valid JSON", "[jsonrpc]") {
  const std::string bad = "a\xff" "b\xc3";
  std::string out;
  REQUIRE_NOTHROW(out = encode_result(Id{std::string(bad)}, json{{bad, bad}}));
  json parsed = json::parse(out);  // strict parser: throws on invalid UTF-8
  CHECK(parsed["id"] == "a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
  CHECK(parsed["result"].begin().value() == "a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
  REQUIRE_NOTHROW(out = encode_error(Id{std::string(bad)}, RpcError{-32603, bad, json(bad)}));
  CHECK(json::parse(out)["error"]["message"] == "a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
  REQUIRE_NOTHROW(out = encode_request(Id{std::int64_t{1}}, bad, json::array({bad})));
  CHECK(json::parse(out)["method"] == "a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
  REQUIRE_NOTHROW(out = encode_notification(bad, json{{"k", bad}}));
  CHECK(json::parse(out)["params"]["k"] == "a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
  CHECK(dump(json(bad)) == "\"a\xEF\xBF\xBD" "b\xEF\xBF\xBD\"");
}

TEST_CASE("jsonrpc: what encode_* writes classifies back to the same message", "[jsonrpc]") {
  auto req = expect<Request>(classify(encode_request(Id{std::string("r1")}, "m", json{{"k", 1}})));
  CHECK(req.id == Id{std::string("r1")});
  CHECK(req.method == "m");
  CHECK(req.params == json{{"k", 1}});
  auto note = expect<Notification>(classify(encode_notification("n", nullptr)));
  CHECK(note.method == "n");
  auto res = expect<Response>(classify(encode_result(Id{std::int64_t{42}}, "ok")));
  CHECK(res.id == Id{std::int64_t{42}});
  CHECK(*res.result == "ok");
  auto err = expect<Response>(classify(encode_error(Id{std::int64_t{43}}, RpcError{-32800, "cancelled", nullptr})));
  CHECK(err.error->code == -32800);
  CHECK(err.error->message == "cancelled");
}

TEST_CASE("jsonrpc: [bug] a number too large for a double is a -32700 parse error, not an exception", "[jsonrpc][bug]") {
  // nlohmann reports a number that overflows a double (1e999) with json::out_of_range (406), not
  // json::parse_error, so classify() -- which catches only parse_error -- lets it escape, through
  // Dispatcher::handle_message and the transport's read callback: one editor message (or one
  // guest control message) ends the process with std::terminate.
  for (std::string text : {R"({"jsonrpc":"2.0","id":1,"method":"m","params":[1e999]})",
                           R"({"jsonrpc":"2.0","id":1e400,"method":"m"})", "6e5536", "-1E+99999"}) {
    INFO(text);
    Message m;
    REQUIRE_NOTHROW(m = classify(text));
    auto bad = expect<InvalidMessage>(m);
    CHECK(bad.error.code == codes::kParseError);
    CHECK_FALSE(bad.id.has_value());
  }
}
