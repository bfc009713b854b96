// Typed reading of params (protocol/params.h) and the initialize params built on it
// (protocol/lifecycle.h).
#include <algorithm>

#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "protocol/lifecycle.h"
#include "protocol/params.h"

using namespace lockroom::protocol;
namespace codes = lockroom::protocol::rpc_error;

namespace {
// The message of the reader's -32602, after checking that its data.field is the field the
// message quotes (every -32602 carries one; "" when the params as a whole are wrong).
std::string message_of(const ParamReader& reader) {
  REQUIRE_FALSE(reader.ok());
  CHECK(reader.error().code == codes::kInvalidParams);
  const std::string& message = reader.error().message;
  REQUIRE(reader.error().data.is_object());
  REQUIRE(reader.error().data.contains("field"));
  std::string field = reader.error().data["field"].get<std::string>();
  CHECK_THAT(message, Catch::StartsWith(field.empty() ? "invalid params: params " : "invalid params: \"" + field + "\" "));
  return message;
}
}  // namespace

TEST_CASE("params: each getter reads its type", "[params]") {
  const json params = {{"name", "box"}, {"count", 3}, {"neg", -4}, {"on", true}, {"argv", {"sh", "-c", "true"}},
                       {"any", {{"k", {1, 2}}}}, {"obj", {{"x", 1}}}};
  ParamReader reader(params);
  CHECK(reader.string("name", true) == std::optional<std::string>("box"));
  CHECK(reader.integer("count", true) == std::optional<std::int64_t>(3));
  CHECK(reader.integer("neg", true) == std::optional<std::int64_t>(-4));
  CHECK(reader.boolean("on", true) == std::optional<bool>(true));
  CHECK(reader.strings("argv", true) == std::optional<std::vector<std::string>>({"sh", "-c", "true"}));
  CHECK(reader.any("any", true) == std::optional<json>(json{{"k", {1, 2}}}));
  auto obj = reader.object("obj", true);
  REQUIRE(obj.has_value());
  CHECK(obj->integer("x", true) == std::optional<std::int64_t>(1));
  CHECK(reader.ok());
  CHECK(obj->ok());
}

TEST_CASE("params: empty arrays and empty strings are values, not absences", "[params]") {
  const json params = {{"s", ""}, {"list", json::array()}, {"f", false}, {"z", 0}};
  ParamReader reader(params);
  CHECK(reader.string("s", true) == std::optional<std::string>(""));
  CHECK(reader.strings("list", true) == std::optional<std::vector<std::string>>(std::vector<std::string>{}));
  CHECK(reader.boolean("f", true) == std::optional<bool>(false));
  CHECK(reader.integer("z", true) == std::optional<std::int64_t>(0));
  CHECK(reader.ok());
}

TEST_CASE("params: a missing optional field is absent and not an error", "[params]") {
  const json params = json::object();
  ParamReader reader(params);
  CHECK_FALSE(reader.string("a", false).has_value());
  CHECK_FALSE(reader.integer("b", false).has_value());
  CHECK_FALSE(reader.boolean("c", false).has_value());
  CHECK_FALSE(reader.strings("d", false).has_value());
  CHECK_FALSE(reader.any("e", false).has_value());
  CHECK_FALSE(reader.object("f", false).has_value());
  CHECK(reader.ok());
}

TEST_CASE("params: a missing required field is -32602 naming it", "[params]") {
  const json params = {{"other", 1}};
  ParamReader reader(params);
  CHECK_FALSE(reader.string("workspace", true).has_value());
  CHECK(message_of(reader) == "invalid params: \"workspace\" is required");
}

TEST_CASE("params: null counts as absent", "[params]") {
  const json params = {{"a", nullptr}};
  ParamReader optional_reader(params);
  CHECK_FALSE(optional_reader.any("a", false).has_value());
  CHECK(optional_reader.ok());
  ParamReader required_reader(params);
  CHECK_FALSE(required_reader.integer("a", true).has_value());
  CHECK(message_of(required_reader) == "invalid params: \"a\" is required");
}

TEST_CASE("params: type errors name the field and the value received", "[params]") {
  const json params = {{"s", 1}, {"i", "lots"}, {"b", 1}, {"l", "sh"}, {"o", {1}}, {"f", 2.5}};
  struct Case {
    std::function<void(ParamReader&)> read;
    std::string expected;
  };
  std::vector<Case> cases = {
      {[](ParamReader& r) { (void)r.string("s", true); }, "invalid params: \"s\" must be a string, got 1"},
      {[](ParamReader& r) { (void)r.integer("i", true); }, "invalid params: \"i\" must be an integer, got \"lots\""},
      {[](ParamReader& r) { (void)r.integer("f", true); }, "invalid params: \"f\" must be an integer, got 2.5"},
      {[](ParamReader& r) { (void)r.boolean("b", true); }, "invalid params: \"b\" must be true or false, got 1"},
      {[](ParamReader& r) { (void)r.strings("l", true); }, "invalid params: \"l\" must be an array of strings, got \"sh\""},
      {[](ParamReader& r) { (void)r.object("o", true); }, "invalid params: \"o\" must be an object, got [1]"},
  };
  for (const auto& c : cases) {
    ParamReader reader(params);
    c.read(reader);
    CHECK(message_of(reader) == c.expected);
  }
}

TEST_CASE("params: an array item of the wrong type is named by its index", "[params]") {
  const json params = {{"argv", {"ls", "-l", 3}}};
  ParamReader reader(params);
  CHECK_FALSE(reader.strings("argv", true).has_value());
  CHECK(message_of(reader) == "invalid params: \"argv\" must be an array of strings, but item 2 is 3");
}

TEST_CASE("params: a long offending value is shortened in the message", "[params]") {
  const json params = {{"n", std::string(200, 'x')}};
  ParamReader reader(params);
  (void)reader.integer("n", true);
  std::string message = message_of(reader);
  CHECK(message == "invalid params: \"n\" must be an integer, got \"" + std::string(56, 'x') + "...");
}

TEST_CASE("params: integers outside the allowed range are refused with the bounds", "[params]") {
  const json params = {{"cpus", 0}, {"mem", 65537}, {"ok", 4}, {"big", 18446744073709551615ull}, {"min", INT64_MIN}};
  ParamReader reader(params);
  CHECK(reader.integer("ok", true, 1, 64) == std::optional<std::int64_t>(4));
  CHECK(reader.ok());
  CHECK_FALSE(reader.integer("cpus", true, 1, 64).has_value());
  CHECK(message_of(reader) == "invalid params: \"cpus\" must be between 1 and 64, got 0");

  ParamReader high(params);
  CHECK_FALSE(high.integer("mem", true, 64, 65536).has_value());
  CHECK(message_of(high) == "invalid params: \"mem\" must be between 64 and 65536, got 65537");

  ParamReader huge(params);
  CHECK_FALSE(huge.integer("big", true).has_value());
  CHECK(message_of(huge) == "invalid params: \"big\" is out of range (at most 9223372036854775807)");

  ParamReader low(params);
  CHECK(low.integer("min", true) == std::optional<std::int64_t>(INT64_MIN));
  CHECK(low.ok());
}

TEST_CASE("params: nested objects report the full dotted path once merged", "[params]") {
  const json params = {{"resources", {{"memoryMiB", "lots"}, {"limits", {{"pids", -1}}}}}};
  ParamReader reader(params);
  auto resources = reader.object("resources", true);
  REQUIRE(resources.has_value());
  CHECK_FALSE(resources->integer("memoryMiB", true).has_value());
  CHECK(reader.ok());  // not until merged
  reader.merge(*resources);
  CHECK(message_of(reader) == "invalid params: \"resources.memoryMiB\" must be an integer, got \"lots\"");

  ParamReader deep_reader(params);
  auto res = deep_reader.object("resources", true);
  auto limits = res->object("limits", true);
  REQUIRE(limits.has_value());
  (void)limits->integer("pids", true, 1, 1000);
  res->merge(*limits);
  deep_reader.merge(*res);
  CHECK(message_of(deep_reader) == "invalid params: \"resources.limits.pids\" must be between 1 and 1000, got -1");

  ParamReader missing(params);
  auto r2 = missing.object("resources", true);
  (void)r2->string("name", true);
  missing.merge(*r2);
  CHECK(message_of(missing) == "invalid params: \"resources.name\" is required");
}

TEST_CASE("params: the first problem is the one reported, by fail() and by merge()", "[params]") {
  const json params = {{"a", "x"}, {"b", "y"}, {"o", {{"c", 1}}}};
  ParamReader reader(params);
  (void)reader.integer("a", true);
  (void)reader.integer("b", true);
  reader.fail("b", "is wrong");
  CHECK(message_of(reader) == "invalid params: \"a\" must be an integer, got \"x\"");

  ParamReader parent(params);
  auto nested = parent.object("o", true);
  (void)nested->string("c", true);
  parent.fail("own", "came first");
  parent.merge(*nested);
  CHECK(message_of(parent) == "invalid params: \"own\" came first");

  ParamReader ok_merge(params);
  auto fine = ok_merge.object("o", true);
  (void)fine->integer("c", true);
  ok_merge.merge(*fine);
  CHECK(ok_merge.ok());
}

TEST_CASE("params: fail() reports a caller's own validation with the path", "[params]") {
  const json params = {{"net", {{"mode", "wide-open"}}}};
  ParamReader reader(params);
  auto net = reader.object("net", true);
  net->fail("mode", "must be \"none\" or \"proxy\", got \"wide-open\"");
  reader.merge(*net);
  CHECK(message_of(reader) == "invalid params: \"net.mode\" must be \"none\" or \"proxy\", got \"wide-open\"");
}

TEST_CASE("params: null params read as an empty object", "[params]") {
  const json params = nullptr;
  ParamReader reader(params);
  CHECK(reader.ok());
  CHECK_FALSE(reader.string("a", false).has_value());
  CHECK(reader.ok());
  (void)reader.string("a", true);
  CHECK(message_of(reader) == "invalid params: \"a\" is required");
}

TEST_CASE("params: params that are not an object are an error before any field is read", "[params]") {
  for (const json& params : {json::array({1, 2}), json("text"), json(5), json(true)}) {
    ParamReader reader(params);
    INFO(params.dump());
    CHECK(message_of(reader) == "invalid params: params must be an object, got " + params.dump());
    CHECK_FALSE(reader.string("a", true).has_value());
    CHECK(message_of(reader) == "invalid params: params must be an object, got " + params.dump());
  }
}

// ---------------------------------------------------------------- initialize params

TEST_CASE("initialize params: a full client declaration is read", "[params][lifecycle]") {
  const json params = {{"processId", 4242},
                       {"clientInfo", {{"name", "vscode"}, {"version", "1.95"}}},
                       {"capabilities",
                        {{"window", {{"workDoneProgress", true}, {"showMessage", json::object()}}},
                         {"experimental", {{"lockroom", {{"networkApproval", true}}}}}}}};
  ParamReader reader(params);
  InitializeParams p = read_initialize_params(reader);
  CHECK(reader.ok());
  CHECK(p.process_id == std::optional<std::int64_t>(4242));
  CHECK(p.client_name == "vscode");
  CHECK(p.client_version == "1.95");
  CHECK(p.work_done_progress);
  CHECK(p.show_message_request);
  CHECK(p.network_approval);
}

TEST_CASE("initialize params: an empty declaration gives the defaults", "[params][lifecycle]") {
  const json params = {{"processId", nullptr}, {"capabilities", json::object()}};
  ParamReader reader(params);
  InitializeParams p = read_initialize_params(reader);
  CHECK(reader.ok());
  CHECK_FALSE(p.process_id.has_value());
  CHECK(p.client_name.empty());
  CHECK_FALSE(p.work_done_progress);
  CHECK_FALSE(p.show_message_request);
  CHECK_FALSE(p.network_approval);
}

TEST_CASE("initialize params: bad fields are reported with their path", "[params][lifecycle]") {
  struct Case {
    json params;
    std::string expected;
  };
  std::vector<Case> cases = {
      {{{"processId", "me"}}, "invalid params: \"processId\" must be an integer or null, got \"me\""},
      {{{"clientInfo", {{"version", "1"}}}}, "invalid params: \"clientInfo.name\" is required"},
      {{{"capabilities", {{"window", {{"workDoneProgress", "yes"}}}}}},
       "invalid params: \"capabilities.window.workDoneProgress\" must be true or false, got \"yes\""},
      {{{"capabilities", {{"experimental", {{"lockroom", {{"networkApproval", 1}}}}}}}},
       "invalid params: \"capabilities.experimental.lockroom.networkApproval\" must be true or false, got 1"},
      {{{"capabilities", 3}}, "invalid params: \"capabilities\" must be an object, got 3"},
  };
  for (const auto& c : cases) {
    ParamReader reader(c.params);
    INFO(c.params.dump());
    (void)read_initialize_params(reader);
    CHECK(message_of(reader) == c.expected);
  }
}

TEST_CASE("initialize result: names the server and offers lockroom's experimental capabilities", "[params][lifecycle]") {
  json result = initialize_result(ServerInfo{"lockroom", "0.1.0"}, {"lockroom/echo", "sandbox/create"});
  CHECK(result["serverInfo"] == json{{"name", "lockroom"}, {"version", "0.1.0"}});
  const json& ours = result["capabilities"]["experimental"]["lockroom"];
  CHECK(ours["protocolVersion"] == 1);
  CHECK(ours["cancellation"] == true);
  CHECK(ours["workDoneProgress"] == true);
  CHECK(ours["methods"] == json{"lockroom/echo", "sandbox/create"});  // as given: the dispatcher's table
  // Not a language server: no textDocument capabilities.
  CHECK(result["capabilities"].size() == 1);
}
