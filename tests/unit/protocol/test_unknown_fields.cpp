// Unknown fields in request params are refused, naming the nearest known field
// (ParamReader::reject_unknown, protocol/params.h), in every protocol reader; and every -32602
// carries data.field, whichever layer found the problem (server/api/error_map.h).
#include <catch2/catch.hpp>

#include <utility>

#include "protocol/lifecycle.h"
#include "protocol/nearest_name.h"
#include "protocol/params.h"
#include "protocol/sandbox.h"
#include "protocol/workspace.h"
#include "server/api/error_map.h"

using namespace lockroom;
using namespace lockroom::protocol;

namespace {

// The -32602 a reader kept: {message, data.field}.
std::pair<std::string, std::string> refusal(const ParamReader& reader) {
  REQUIRE_FALSE(reader.ok());
  CHECK(reader.error().code == rpc_error::kInvalidParams);
  return {reader.error().message, reader.error().data.at("field").get<std::string>()};
}

template <typename Read>
std::pair<std::string, std::string> refusal_of(const char* params_text, Read read) {
  json params = json::parse(params_text);
  ParamReader reader(params);
  (void)read(reader);
  return refusal(reader);
}

template <typename Read>
bool accepted(const char* params_text, Read read) {
  json params = json::parse(params_text);
  ParamReader reader(params);
  (void)read(reader);
  if (!reader.ok()) UNSCOPED_INFO(reader.error().message);
  return reader.ok();
}

}  // namespace

TEST_CASE("nearest name: a near miss, a different case, nothing close", "[params][unknown]") {
  std::vector<std::string> resources{"cpus", "memoryMiB", "diskMiB", "timeoutSeconds", "maxProcesses", "maxOutputBytes"};
  CHECK(ParamReader::nearest("memoryMb", resources) == "memoryMiB");
  CHECK(ParamReader::nearest("memorymib", resources) == "memoryMiB");
  CHECK(ParamReader::nearest("MEMORYMIB", resources) == "memoryMiB");
  CHECK(ParamReader::nearest("timeout", resources) == "timeoutSeconds");  // 7 edits, but it begins the name
  CHECK(ParamReader::nearest("time", resources) == "timeoutSeconds");
  CHECK(ParamReader::nearest("ti", resources) == "");  // too short to stand for a prefix
  CHECK(ParamReader::nearest("outputBytes", resources) == "maxOutputBytes");  // 3 edits of 14
  CHECK(ParamReader::nearest("bytes", resources) == "");  // ends a name: not close enough
  CHECK(ParamReader::nearest("cpusAndMore", resources) == "cpus");  // a known name begins it
  CHECK(ParamReader::nearest("timeoutSecond", resources) == "timeoutSeconds");
  CHECK(ParamReader::nearest("maxProcess", resources) == "maxProcesses");
  CHECK(ParamReader::nearest("bogus", resources) == "");
  CHECK(ParamReader::nearest("cpu", resources) == "cpus");
  CHECK(ParamReader::nearest("anything", {}) == "");
  CHECK(ParamReader::nearest(std::string(300, 'c'), resources) == "");
  // The nearest of several near ones wins; the first of equally near ones.
  CHECK(ParamReader::nearest("kit", std::vector<std::string>{"kits", "kid"}) == "kits");
  CHECK(name_distance("kitten", "sitting") == 3);
  CHECK(name_distance("", "abc") == 3);
  CHECK(name_distance("ABC", "abc") == 0);
}

TEST_CASE("unknown fields: refused at the top level with a suggestion and data.field", "[params][unknown]") {
  json params = {{"sandboxId", "sb-1"}, {"sandboxID", "sb-2"}};
  ParamReader reader(params);
  CHECK(reader.string("sandboxId", true) == std::optional<std::string>("sb-1"));
  CHECK(reader.ok());
  reader.reject_unknown();
  auto [message, field] = refusal(reader);
  CHECK(message == R"(invalid params: "sandboxID" is not a known field; did you mean "sandboxId"?)");
  CHECK(field == "sandboxID");
}

TEST_CASE("unknown fields: without a close name, the known ones are listed", "[params][unknown]") {
  auto [message, field] = refusal_of(R"({"sandboxId":"sb-1","force":true})", read_sandbox_id);
  CHECK(message == R"(invalid params: "force" is not a known field (known: sandboxId))");
  CHECK(field == "force");
}

TEST_CASE("unknown fields: nested readers report the full path once merged", "[params][unknown]") {
  auto [message, field] = refusal_of(R"({"resources":{"memoryMb":1024}})", read_sandbox_create);
  CHECK(message == R"(invalid params: "resources.memoryMb" is not a known field; did you mean "resources.memoryMiB"?)");
  CHECK(field == "resources.memoryMb");

  auto deep = refusal_of(R"({"workspace":{"path":"/w","limits":{"maxFile":3}}})", read_sandbox_create);
  CHECK(deep.first == R"(invalid params: "workspace.limits.maxFile" is not a known field; did you mean "workspace.limits.maxFiles"?)");
  CHECK(deep.second == "workspace.limits.maxFile");

  auto item = refusal_of(R"({"sandboxId":"s","viewId":"v-1","select":[{"path":"a"},{"path":"b","hunk":["h1"]}]})", read_changes_apply);
  CHECK(item.first == R"(invalid params: "select[1].hunk" is not a known field; did you mean "select[1].hunks"?)");
  CHECK(item.second == "select[1].hunk");

  auto pty = refusal_of(R"({"sandboxId":"s","argv":["sh"],"pty":{"cols":80,"rows":24,"colour":true}})", read_process_start);
  CHECK(pty.second == "pty.colour");
}

TEST_CASE("unknown fields: workDoneToken and partialResultToken pass at the top level only", "[params][unknown]") {
  CHECK(accepted(R"({"sandboxId":"s","workDoneToken":"t","partialResultToken":7})", read_sandbox_id));
  CHECK(accepted(R"({"resources":{"cpus":1},"workDoneToken":1})", read_sandbox_create));
  auto nested = refusal_of(R"({"resources":{"workDoneToken":"t"}})", read_sandbox_create);
  CHECK(nested.second == "resources.workDoneToken");
}

TEST_CASE("unknown fields: fields read by other parsers are named by the reader", "[params][unknown]") {
  // sandbox/create's network and secrets are read by the egress parsers, not the ParamReader.
  CHECK(accepted(R"({"network":{"rules":[]},"secrets":[]})", read_sandbox_create));
  auto typo = refusal_of(R"({"netwrok":false})", read_sandbox_create);
  CHECK(typo.first == R"(invalid params: "netwrok" is not a known field; did you mean "network"?)");
}

TEST_CASE("unknown fields: an earlier problem is the one reported", "[params][unknown]") {
  auto [message, field] = refusal_of(R"({"resources":{"cpus":"two"},"bogus":1})", read_sandbox_create);
  CHECK(field == "resources.cpus");
  auto missing = refusal_of(R"({"processid":"p-1"})", read_process_id);
  CHECK(missing.first == R"(invalid params: "processId" is required)");
}

TEST_CASE("unknown fields: every protocol reader refuses them", "[params][unknown]") {
  CHECK(refusal_of(R"({"sandboxId":"s","argv":["sh"],"cwdir":"/"})", read_process_start).first ==
        R"(invalid params: "cwdir" is not a known field; did you mean "cwd"?)");
  CHECK(refusal_of(R"({"processId":"p","data":"x","encodng":"utf-8"})", read_process_write).second == "encodng");
  CHECK(refusal_of(R"({"processId":"p","cols":80,"rows":24,"x":1})", read_process_resize).second == "x");
  CHECK(refusal_of(R"({"processId":"p","signal":"INT","sig":2})", read_process_signal).second == "sig");
  CHECK(refusal_of(R"({"processId":"p","all":true})", read_process_id).second == "all");
  CHECK(refusal_of(R"({"sandboxId":"s","paths":["a"]})", read_changes_diff).first ==
        R"(invalid params: "paths" is not a known field; did you mean "path"?)");
  CHECK(refusal_of(R"({"sandboxId":"s","path":"a","sides":"base"})", read_changes_content).second == "sides");
  CHECK(refusal_of(R"({"sandboxId":"s","viewId":"v-1","mode":"branch","branchName":"x"})", read_changes_apply).second == "branchName");
  CHECK(refusal_of(R"({"sandboxId":"s","path":["a"]})", read_changes_discard).first ==
        R"(invalid params: "path" is not a known field; did you mean "paths"?)");
  CHECK(refusal_of(R"({"kits":[],"workspace":{"path":"/w","withold":["x"]}})", read_sandbox_create).second == "workspace.withold");
}

TEST_CASE("unknown fields: initialize stays lenient", "[params][unknown]") {
  // LSP clients send many fields lockroom does not read; read_initialize_params never refuses them.
  json params = json::parse(R"({"processId":1,"rootUri":null,"trace":"off","clientInfo":{"name":"c","extra":1},
                                "capabilities":{"textDocument":{},"window":{"workDoneProgress":true,"other":1}}})");
  ParamReader reader(params);
  (void)read_initialize_params(reader);
  CHECK(reader.ok());
}

TEST_CASE("error model: core errors become -32602 with data.field or -32803 with data.kind", "[params][errors]") {
  auto resources = api::to_rpc_error(make_field_error("resources.cpus", "resources.cpus = 0 is below the minimum of 1; ask for at least 1 vCPU"));
  CHECK(resources.code == rpc_error::kInvalidParams);
  CHECK(resources.message == R"(invalid params: "resources.cpus" = 0 is below the minimum of 1; ask for at least 1 vCPU)");
  CHECK(resources.data == json{{"field", "resources.cpus"}});

  auto policy = api::to_rpc_error(make_field_error("network.rules[0].action", "network.rules[0].action: is required (\"allow\" or \"deny\")"));
  CHECK(policy.message == R"(invalid params: "network.rules[0].action" is required ("allow" or "deny"))");
  CHECK(policy.data == json{{"field", "network.rules[0].action"}});

  auto kits = api::to_rpc_error(with_field(make_error(ErrorCode::kInvalidInput, "kit.yaml:3:1: env: must be a map"), "kits"));
  CHECK(kits.message == R"(invalid params: "kits" kit.yaml:3:1: env: must be a map)");
  CHECK(kits.data == json{{"field", "kits"}});

  auto unattributed = api::to_rpc_error(make_error(ErrorCode::kInvalidInput, "the kits and the request together have too many rules"));
  CHECK(unattributed.message == "invalid params: the kits and the request together have too many rules");
  CHECK(unattributed.data == json{{"field", ""}});

  struct Case {
    ErrorCode code;
    const char* kind;
  };
  for (auto [code, kind] : {Case{ErrorCode::kNotFound, "notFound"}, Case{ErrorCode::kWrongState, "wrongState"},
                            Case{ErrorCode::kLimitExceeded, "limitExceeded"}, Case{ErrorCode::kUnavailable, "unavailable"}}) {
    auto e = api::to_rpc_error(make_error(code, "why"));
    CHECK(e.code == rpc_error::kRequestFailed);
    CHECK(e.message == "why");
    CHECK(e.data == json{{"kind", kind}});
  }
  CHECK(api::to_rpc_error(make_error(ErrorCode::kCancelled, "c")).code == rpc_error::kRequestCancelled);
  CHECK(api::to_rpc_error(make_error(ErrorCode::kInternal, "i")).code == rpc_error::kInternalError);
}
