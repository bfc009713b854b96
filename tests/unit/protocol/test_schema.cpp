// The machine-readable contract (protocol/schema/): the schema is well formed, every method has
// examples that satisfy it, and every request's example params are accepted by the server's own
// readers — so the schema, its examples and the server cannot drift apart unnoticed. (What the
// server sends is checked against the same schema by the transcript and integration harnesses.)
#include <catch2/catch.hpp>

#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "protocol/files.h"
#include "protocol/lifecycle.h"
#include "protocol/sandbox.h"
#include "protocol/workspace.h"
#include "server/api/network_methods.h"
#include "server/egress/policy/policy_json.h"
#include "tests/support/json_schema.h"

using lockroom::testing::JsonSchema;
using nlohmann::json;
namespace protocol = lockroom::protocol;

namespace {

json load(const std::string& name) {
  std::ifstream in(std::string(LOCKROOM_SCHEMA_DIR) + "/" + name);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

const JsonSchema& schema() {
  static const JsonSchema s(load("lockroom.schema.json"));
  return s;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

// The server's own reader of each request's params: true when it accepts them. A method whose
// params are read somewhere else is listed in kReadElsewhere with the reason.
using Reader = std::function<std::string(const json& params)>;

template <typename Read>
Reader with_param_reader(Read read) {
  return [read](const json& params) -> std::string {
    protocol::ParamReader reader(params);
    (void)read(reader);
    return reader.ok() ? "" : reader.error().message;
  };
}

const std::map<std::string, Reader>& readers() {
  static const std::map<std::string, Reader> table{
      {"initialize", with_param_reader(protocol::read_initialize_params)},
      {"sandbox/create",
       [](const json& params) -> std::string {
         protocol::ParamReader reader(params);
         (void)protocol::read_sandbox_create(reader);
         if (!reader.ok()) return reader.error().message;
         auto network = lockroom::api::read_network_request(params);
         return network ? "" : network.error().message;
       }},
      {"sandbox/destroy", with_param_reader(protocol::read_sandbox_id)},
      {"sandbox/attach", with_param_reader(protocol::read_sandbox_id)},
      {"sandbox/setLabel", with_param_reader(protocol::read_sandbox_set_label)},
      {"process/list", with_param_reader(protocol::read_sandbox_id)},
      {"file/read", with_param_reader(protocol::read_file_read)},
      {"file/write", with_param_reader(protocol::read_file_write)},
      {"workspace/sync", with_param_reader(protocol::read_sandbox_id)},
      {"process/start", with_param_reader(protocol::read_process_start)},
      {"process/write", with_param_reader(protocol::read_process_write)},
      {"process/closeStdin", with_param_reader(protocol::read_process_id)},
      {"process/resize", with_param_reader(protocol::read_process_resize)},
      {"process/signal", with_param_reader(protocol::read_process_signal)},
      {"changes/list", with_param_reader(protocol::read_changes_diff)},
      {"changes/diff", with_param_reader(protocol::read_changes_diff)},
      {"changes/content", with_param_reader(protocol::read_changes_content)},
      {"changes/apply", with_param_reader(protocol::read_changes_apply)},
      {"changes/discard", with_param_reader(protocol::read_changes_discard)},
      {"network/policy",
       [](const json& params) -> std::string {
         // false switches the network off (the handler's own case); anything else is a policy.
         if (!params.contains("policy") || params["policy"] == false) return "";
         auto policy = lockroom::egress::parse_policy(params["policy"], "policy");
         return policy ? "" : policy.error().message;
       }},
  };
  return table;
}

// Requests from the client whose params no reader above covers, and why.
const std::map<std::string, std::string> kReadElsewhere{
    {"shutdown", "takes no params"},
    {"sandbox/list", "takes no params (it refuses any)"},
    {"lockroom/echo", "answers any params unchanged"},
    {"kit/list", "read in server/api/kit_methods.cpp"},
    {"kit/validate", "read in server/api/kit_methods.cpp"},
};

}  // namespace

TEST_CASE("schema: every definition uses only keywords the validator checks, and every $ref resolves", "[protocol][schema]") {
  auto problems = schema().check_schema();
  INFO(joined(problems));
  CHECK(problems.empty());
}

TEST_CASE("schema: methods.json names definitions the schema has", "[protocol][schema]") {
  json methods = load("methods.json")["methods"];
  REQUIRE(methods.size() > 20);
  for (const auto& [name, m] : methods.items()) {
    INFO(name);
    CHECK((m["kind"] == "request" || m["kind"] == "notification"));
    CHECK((m["from"] == "client" || m["from"] == "server" || m["from"] == "both"));
    CHECK(schema().has_def(m["params"].get<std::string>()));
    if (m["kind"] == "request") CHECK(schema().has_def(m["result"].get<std::string>()));
    else CHECK_FALSE(m.contains("result"));
    CHECK(m["page"].is_string());
  }
}

TEST_CASE("schema: every message has an example, and every example satisfies the schema", "[protocol][schema]") {
  json methods = load("methods.json")["methods"];
  json examples = load("examples.json")["examples"];
  std::set<std::string> seen;
  for (const auto& e : examples) {
    std::string method = e["method"];
    INFO(method << " " << e.dump());
    REQUIRE(methods.contains(method));
    seen.insert(method);
    const json& m = methods[method];
    json params = e.value("params", json());
    auto problems = schema().validate(m["params"], params, method + " params");
    INFO(joined(problems));
    CHECK(problems.empty());
    if (m["kind"] == "request") {
      REQUIRE(e.contains("result"));
      auto result_problems = schema().validate(m["result"], e["result"], method + " result");
      INFO(joined(result_problems));
      CHECK(result_problems.empty());
    } else {
      CHECK_FALSE(e.contains("result"));
    }
  }
  for (const auto& [name, m] : methods.items()) {
    INFO(name);
    CHECK(seen.count(name) == 1);
  }
}

TEST_CASE("schema: every request example's params are accepted by the server's own reader", "[protocol][schema]") {
  json methods = load("methods.json")["methods"];
  json examples = load("examples.json")["examples"];
  for (const auto& [name, m] : methods.items()) {
    if (m["kind"] != "request" || m["from"] != "client") continue;
    INFO(name);
    CHECK((readers().count(name) == 1) != (kReadElsewhere.count(name) == 1));
  }
  std::set<std::string> read;
  for (const auto& e : examples) {
    auto reader = readers().find(e["method"].get<std::string>());
    if (reader == readers().end()) continue;
    INFO(e.dump());
    CHECK(reader->second(e.value("params", json::object())) == "");
    read.insert(reader->first);
  }
  for (const auto& [name, reader] : readers()) {
    INFO(name << " has no example to read");
    CHECK(read.count(name) == 1);
  }
  // And a reader does refuse: the same check fails on params the server must not take.
  CHECK(readers().at("process/start")(json{{"sandboxId", "sb-1"}, {"argv", json::array()}}) != "");
  CHECK(readers().at("sandbox/create")(json{{"network", {{"rules", {{{"action", "maybe"}, {"host", "x"}}}}}}}) != "");
}

TEST_CASE("schema: the validator refuses what the schema does not allow", "[protocol][schema]") {
  json good{{"sandboxId", "sb-1a2b3c"}, {"argv", {"sh"}}};
  CHECK(schema().validate("ProcessStartParams", good, "p").empty());

  auto unknown = schema().validate("ProcessStartParams", json{{"sandboxId", "sb-1a2b3c"}, {"argv", {"sh"}}, {"cwdd", "/"}}, "p");
  REQUIRE(unknown.size() == 1);
  CHECK(unknown[0].find("p.cwdd") != std::string::npos);

  auto missing = schema().validate("ProcessStartParams", json{{"sandboxId", "sb-1a2b3c"}}, "p");
  REQUIRE(missing.size() == 1);
  CHECK(missing[0].find("argv") != std::string::npos);

  CHECK_FALSE(schema().validate("ProcessStartParams", json{{"sandboxId", "nope"}, {"argv", {"sh"}}}, "p").empty());
  CHECK_FALSE(schema().validate("ProcessStartParams", json{{"sandboxId", "sb-1"}, {"argv", json::array()}}, "p").empty());
  CHECK_FALSE(schema().validate("SandboxCreateParams", json{{"network", true}}, "p").empty());
  CHECK(schema().validate("SandboxCreateParams", json{{"network", false}}, "p").empty());
  CHECK_FALSE(schema().validate("ChangesApplyResult", json{{"mode", "tree"}, {"files", json::array()}, {"counts", json::object()}}, "r").empty());
  CHECK_FALSE(schema().validate("NoSuchThing", json::object(), "x").empty());

  JsonSchema odd(json{{"$defs", {{"A", {{"type", "string"}, {"format", "uri"}}}, {"B", {{"$ref", "#/$defs/C"}}}}}});
  auto problems = odd.check_schema();
  CHECK(problems.size() == 2);
}
