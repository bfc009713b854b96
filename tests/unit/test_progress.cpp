// WorkDoneProgress (server/rpc/progress.h) on a real Connection over pipes: what the editor
// receives for a request with and without a workDoneToken.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <string>
#include <vector>

#include "server/rpc/connection.h"
#include "server/rpc/framing.h"
#include "server/rpc/progress.h"
#include "tests/unit/connection_harness.h"
#include "tests/unit/uv_test_util.h"

using lockroom::protocol::json;
using lockroom::rpc::Connection;
using lockroom::rpc::ConnectionOptions;
using lockroom::rpc::ContentLengthFraming;
using lockroom::rpc::FrameEvent;
using lockroom::rpc::WorkDoneProgress;
using namespace lockroom::testing;

namespace {

json progress(const json& token, const json& value) {
  return json{{"jsonrpc", "2.0"}, {"method", "$/progress"}, {"params", {{"token", token}, {"value", value}}}};
}

}  // namespace

TEST_CASE("progress: begin, report and end go out under the client's token", "[progress]") {
  auto got = editor_receives([](Connection& c) {
    WorkDoneProgress p(c, json{{"workDoneToken", "tok-1"}, {"other", 1}});
    CHECK(p.active());
    p.begin("Booting sandbox", 150, true);
    p.report("kernel up", -5);
    p.report("agent up");
    p.end("ready");
    p.report("after the end");  // ignored
    p.end("twice");             // ignored
  });
  CHECK(got == std::vector<json>{
                   progress("tok-1", {{"kind", "begin"}, {"title", "Booting sandbox"}, {"cancellable", true}, {"percentage", 100}}),
                   progress("tok-1", {{"kind", "report"}, {"message", "kernel up"}, {"percentage", 0}}),
                   progress("tok-1", {{"kind", "report"}, {"message", "agent up"}}),
                   progress("tok-1", {{"kind", "end"}, {"message", "ready"}}),
               });
}

TEST_CASE("progress: an integer token works, and a progress begun and never ended is ended when destroyed", "[progress]") {
  auto got = editor_receives([](Connection& c) {
    WorkDoneProgress p(c, json{{"workDoneToken", 42}});
    p.report("before begin");  // ignored
    p.begin("Syncing");
  });
  CHECK(got == std::vector<json>{
                   progress(42, {{"kind", "begin"}, {"title", "Syncing"}, {"cancellable", false}}),
                   progress(42, {{"kind", "end"}}),
               });
}

TEST_CASE("progress: without a usable token nothing is sent", "[progress]") {
  auto got = editor_receives([](Connection& c) {
    for (const json& params : {json(nullptr), json::object(), json{{"workDoneToken", 1.5}},
                               json{{"workDoneToken", json::object()}}, json::array({1})}) {
      WorkDoneProgress p(c, params);
      CHECK_FALSE(p.active());
      p.begin("x");
      p.report("y");
      p.end("z");
    }
    c.log_message(lockroom::rpc::MessageType::kInfo, "marker");
  });
  REQUIRE(got.size() == 1);
  CHECK(got[0] == json{{"jsonrpc", "2.0"}, {"method", "window/logMessage"}, {"params", {{"type", 3}, {"message", "marker"}}}});
}
