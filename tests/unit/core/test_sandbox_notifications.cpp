// What the editor receives for the sandbox events that are not process output: sandbox/misbehaved
// (a review refused entries of the guest's workspace) and sandbox/limitReached, each as
// protocol/sandboxes.md shows it, through SandboxMethods on a real Connection over pipes.
#include <catch2/catch.hpp>

#include "server/api/sandbox_methods.h"
#include "tests/unit/connection_harness.h"

using lockroom::protocol::json;
using namespace lockroom;
using namespace lockroom::testing;

TEST_CASE("sandbox events: sandbox/misbehaved carries the count, the first entries and a message", "[api][notifications]") {
  core::MisbehaviourEvent event;
  event.source = "workspace";
  event.count = 2;
  event.entries = {{"../escape", "the path has a '..' component"}, {"bad\\xffname.txt", "the path is not valid UTF-8"}};
  event.message = "the guest's workspace listed 2 entries lockroom refused; the review goes on without them";
  auto received = editor_receives([&](rpc::Connection& connection) {
    api::SandboxMethods methods(connection);
    methods.guest_misbehaved("sb-1a2b3c", event);
  });
  REQUIRE(received.size() == 1);
  CHECK(received[0] == json{{"jsonrpc", "2.0"},
                            {"method", "sandbox/misbehaved"},
                            {"params",
                             {{"sandboxId", "sb-1a2b3c"},
                              {"source", "workspace"},
                              {"count", 2},
                              {"entries",
                               {{{"path", "../escape"}, {"reason", "the path has a '..' component"}},
                                {{"path", "bad\\xffname.txt"}, {"reason", "the path is not valid UTF-8"}}}},
                              {"message", event.message}}}});
}

TEST_CASE("sandbox events: sandbox/limitReached names the limit, its value and the process when there is one", "[api][notifications]") {
  auto received = editor_receives([&](rpc::Connection& connection) {
    api::SandboxMethods methods(connection);
    methods.limit_reached("sb-1", core::LimitEvent{core::LimitKind::kDisk, "the sandbox's disk is full", std::nullopt, 16});
    methods.limit_reached("sb-1", core::LimitEvent{core::LimitKind::kOutput, "p-5 wrote too much", std::string("p-5"), 4096});
  });
  REQUIRE(received.size() == 2);
  CHECK(received[0].at("method") == "sandbox/limitReached");
  CHECK(received[0].at("params") == json{{"sandboxId", "sb-1"}, {"limit", "disk"}, {"message", "the sandbox's disk is full"}, {"value", 16}});
  CHECK(received[1].at("params") ==
        json{{"sandboxId", "sb-1"}, {"limit", "output"}, {"message", "p-5 wrote too much"}, {"processId", "p-5"}, {"value", 4096}});
}
