// A hostile guest: the scripted lying agent breaks one rule per test. Each time the channel must
// fail with a reason naming the rule, tell whoever waits (pending calls, streams), and let the
// loop close cleanly.
#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include "tests/unit/channel/lying_world.h"

using namespace lockroom;
using namespace lockroom::testing;
namespace wire = lockroom::protocol::channel;
using protocol::json;

namespace {

// A GuestChannel connected to a LyingAgent; run() waits until the channel fails.
struct Hostile : LyingWorld {
  using LyingWorld::LyingWorld;


  std::string run() {
    REQUIRE(loop.run_until([&] { return failure.has_value(); }, 10s));
    CHECK(channel->failed());
    CHECK(failure->code == ErrorCode::kUnavailable);
    return failure->message;
  }

  // A call that will see the channel fail.
  std::shared_ptr<std::optional<rpc::CallOutcome>> call(const char* method, json params = json::object()) {
    auto outcome = std::make_shared<std::optional<rpc::CallOutcome>>();
    channel->call(method, params, std::chrono::seconds(10), [outcome](rpc::CallOutcome o) { *outcome = std::move(o); });
    return outcome;
  }

};

std::string u32(std::uint32_t v) {
  std::string s;
  wire::put_u32(s, v);
  return s;
}

}  // namespace

TEST_CASE("lying agent: garbage bytes", "[channel][hostile]") {
  Hostile t;
  t.wait_ready();
  t.agent->on_request([](LyingAgent& a, const protocol::Request&) { a.send_raw("\x99garbage that is no frame at all"); });
  auto pending = t.call("health");
  CHECK_THAT(t.run(), Catch::Contains("unknown frame kind 0x99"));
  REQUIRE(*pending);
  CHECK((*pending)->error->message == "the guest channel failed: " + t.channel->failure());
  CHECK(t.finish() == 0);
}

TEST_CASE("lying agent: a peer that is not an agent at all", "[channel][hostile]") {
  Hostile t;
  t.agent->on_hello([](LyingAgent& a, const protocol::Request&) { a.send_raw("ready\n"); });
  CHECK_THAT(t.run(), Catch::Contains("unknown frame kind 0x72"));  // 'r'
  CHECK_FALSE(t.ready);
  CHECK(t.finish() == 0);
}

TEST_CASE("lying agent: an oversized length", "[channel][hostile]") {
  Hostile t;
  t.wait_ready();
  t.agent->on_request([](LyingAgent& a, const protocol::Request&) {
    std::string header{3, 0, 0, 0};
    wire::put_u32(header, 2);
    wire::put_u32(header, 0x7fffffff);
    a.send_raw(header);
  });
  t.call("health");
  CHECK_THAT(t.run(), Catch::Contains("announces a payload of 2147483647 bytes, more than the limit of 65536 bytes"));
  CHECK(t.channel->stats().bytes_in < 1024);
  CHECK(t.finish() == 0);
}

TEST_CASE("lying agent: data on a stream that was never opened", "[channel][hostile]") {
  Hostile t;
  t.wait_ready();
  t.agent->on_request([](LyingAgent& a, const protocol::Request&) { a.send_frame(wire::Kind::kData, 0, 8, "surprise"); });
  t.call("health");
  CHECK_THAT(t.run(), Catch::Contains("DATA frame on stream 8, which was never opened"));
  CHECK(t.finish() == 0);
}

TEST_CASE("lying agent: a reply to an id that was never sent", "[channel][hostile]") {
  Hostile t;
  t.wait_ready();
  t.agent->on_request([](LyingAgent& a, const protocol::Request&) { a.reply(protocol::Id{std::int64_t{999}}, json::object()); });
  auto pending = t.call("health");
  CHECK_THAT(t.run(), Catch::Contains("answered request id 999, which was never sent or was already answered"));
  REQUIRE(*pending);
  CHECK((*pending)->error);
  CHECK(t.finish() == 0);
}

TEST_CASE("lying agent: a second answer to the same request", "[channel][hostile]") {
  Hostile t;
  t.wait_ready();
  t.agent->on_request([](LyingAgent& a, const protocol::Request& r) {
    a.reply(r.id, json::object());
    a.reply(r.id, json::object());
  });
  auto pending = t.call("health");
  CHECK_THAT(t.run(), Catch::Contains("which was never sent or was already answered"));
  CHECK(t.finish() == 0);
}

TEST_CASE("lying agent: a huge control message", "[channel][hostile]") {
  Hostile t;
  t.wait_ready();
  t.agent->on_request([](LyingAgent& a, const protocol::Request& r) {
    a.reply(r.id, json{{"padding", std::string(3u << 20, 'p')}});
  });
  t.call("health");
  CHECK_THAT(t.run(), Catch::Contains("a control message grew to") && Catch::Contains("more than the limit of 1048576 bytes"));
  CHECK(t.finish() == 0);
}

TEST_CASE("lying agent: silence instead of hello", "[channel][hostile]") {
  channel::ChannelOptions options;
  options.hello_timeout = std::chrono::milliseconds(200);
  Hostile t(options);
  t.agent->on_hello([](LyingAgent&, const protocol::Request&) {});
  CHECK_THAT(t.run(), Catch::Contains("hello failed: the client did not answer hello within 200 ms"));
  CHECK(t.finish() == 0);
}

TEST_CASE("lying agent: a hello that breaks the rules", "[channel][hostile]") {
  SECTION("wrong protocol") {
    Hostile t;
    t.agent->on_hello([](LyingAgent& a, const protocol::Request& r) {
      wire::HelloResult hello;
      hello.protocol = 9;
      hello.agent_version = "x";
      hello.pid = 1;
      hello.process_limit = "rlimit";
      a.reply(r.id, wire::to_json(hello));
    });
    CHECK_THAT(t.run(), Catch::Contains("the agent speaks channel protocol 9 but this server speaks 1"));
    CHECK(t.finish() == 0);
  }
  SECTION("settings out of bounds") {
    Hostile t;
    t.agent->on_hello([](LyingAgent& a, const protocol::Request& r) {
      wire::HelloResult hello;
      hello.agent_version = "x";
      hello.pid = 1;
      hello.process_limit = "rlimit";
      hello.settings.max_frame = 16;
      a.reply(r.id, wire::to_json(hello));
    });
    CHECK_THAT(t.run(), Catch::Contains("the agent's hello is unacceptable: hello: \"maxFrame\" is 16"));
    CHECK(t.finish() == 0);
  }
  SECTION("not a hello at all") {
    Hostile t;
    t.agent->on_hello([](LyingAgent& a, const protocol::Request& r) { a.reply(r.id, json{{"hi", true}}); });
    CHECK_THAT(t.run(), Catch::Contains("malformed reply to hello: \"protocol\" is required"));
    CHECK(t.finish() == 0);
  }
  SECTION("stream frames before hello") {
    Hostile t;
    t.agent->on_hello([](LyingAgent& a, const protocol::Request&) { a.send_frame(wire::Kind::kOpen, 0, 2, ""); });
    CHECK_THAT(t.run(), Catch::Contains("OPEN frame on stream 2 arrived before the hello handshake finished"));
    CHECK(t.finish() == 0);
  }
}

TEST_CASE("lying agent: requests, unknown notifications and reported errors", "[channel][hostile]") {
  SECTION("a request from the agent") {
    Hostile t;
    t.wait_ready();
    t.agent->on_request([](LyingAgent& a, const protocol::Request&) {
      a.send_control_text(protocol::encode_request(protocol::Id{std::int64_t{1}}, "host.shell", json::object()));
    });
    t.call("health");
    CHECK_THAT(t.run(), Catch::Contains("the agent sent a request (\"host.shell\"); an agent may only answer and notify"));
    CHECK(t.finish() == 0);
  }
  SECTION("an unknown notification") {
    Hostile t;
    t.wait_ready();
    t.agent->on_request([](LyingAgent& a, const protocol::Request&) { a.notify("mine.now", json::object()); });
    t.call("health");
    CHECK_THAT(t.run(), Catch::Contains("unknown notification \"mine.now\""));
    CHECK(t.finish() == 0);
  }
  SECTION("invalid JSON") {
    Hostile t;
    t.wait_ready();
    t.agent->on_request([](LyingAgent& a, const protocol::Request&) { a.send_control_text("{not json"); });
    t.call("health");
    CHECK_THAT(t.run(), Catch::Contains("the agent sent an invalid control message: parse error"));
    CHECK(t.finish() == 0);
  }
  SECTION("channel.error") {
    Hostile t;
    t.wait_ready();
    t.agent->on_request([](LyingAgent& a, const protocol::Request&) { a.notify("channel.error", json{{"message", "bad frame"}}); });
    t.call("health");
    CHECK_THAT(t.run(), Catch::Contains("the agent reported a channel protocol error: bad frame"));
    CHECK(t.finish() == 0);
  }
}

TEST_CASE("lying agent: flow control is enforced", "[channel][hostile]") {
  SECTION("data beyond credit") {
    Hostile t;
    t.wait_ready();
    t.agent->on_request([](LyingAgent& a, const protocol::Request&) {
      std::uint32_t s = a.open_stream();
      a.send_data(s, std::string((256u << 10) + 1, 'd'));
    });
    t.call("health");
    CHECK_THAT(t.run(), Catch::Contains("the peer ignores flow control"));
    CHECK(t.channel->stats().max_held <= (256u << 10));
    CHECK(t.finish() == 0);
  }
  SECTION("credit overflow") {
    Hostile t;
    t.wait_ready();
    t.agent->on_request([](LyingAgent& a, const protocol::Request&) {
      std::uint32_t s = a.open_stream();
      a.send_frame(wire::Kind::kWindow, 0, s, u32(0x7fffffff));
    });
    t.call("health");
    CHECK_THAT(t.run(), Catch::Contains("(credit overflow)"));
    CHECK(t.finish() == 0);
  }
  SECTION("too much on streams nobody asked for") {
    Hostile t;
    t.wait_ready();
    t.agent->on_request([](LyingAgent& a, const protocol::Request&) {
      for (int i = 0; i < 5; ++i) a.send_data(a.open_stream(), std::string(250u << 10, 'u'));
    });
    t.call("health");
    CHECK_THAT(t.run(), Catch::Contains("bytes on streams that no reply has announced"));
    CHECK(t.finish() == 0);
  }
}

TEST_CASE("lying agent: process replies that do not add up", "[channel][hostile]") {
  SECTION("streams that were never opened") {
    Hostile t;
    t.wait_ready();
    channel::AgentClient& client = t.agent_client();
    t.agent->on_request([](LyingAgent& a, const protocol::Request& r) {
      a.reply(r.id, json{{"pid", 42}, {"streams", {{"stdin", 2}, {"stdout", 4}, {"stderr", 6}}}});
    });
    std::optional<Result<wire::ProcessStartResult>> started;
    client.start_process(argv({"true"}), {}, [&](Result<wire::ProcessStartResult> r) { started.emplace(std::move(r)); });
    CHECK_THAT(t.run(), Catch::Contains("malformed reply to process.start: stream 2 was never opened by the agent"));
    REQUIRE(started);
    CHECK_FALSE(*started);
    CHECK(t.finish() == 0);
  }
  SECTION("an exit for a process that was never started") {
    Hostile t;
    t.wait_ready();
    t.agent_client();  // registers the process.exited handler
    t.agent->on_request([](LyingAgent& a, const protocol::Request&) { a.notify("process.exited", json{{"pid", 4242}, {"exitCode", 0}}); });
    t.call("health");
    CHECK_THAT(t.run(), Catch::Contains("process.exited: pid 4242 was never started by this server"));
    CHECK(t.finish() == 0);
  }
  SECTION("a result of the wrong shape") {
    Hostile t;
    t.wait_ready();
    channel::AgentClient& client = t.agent_client();
    t.agent->on_request([](LyingAgent& a, const protocol::Request& r) { a.reply(r.id, json{{"uptimeMs", "soon"}}); });
    std::optional<Result<wire::HealthResult>> health;
    client.health([&](Result<wire::HealthResult> r) { health.emplace(std::move(r)); });
    CHECK_THAT(t.run(), Catch::Contains("malformed reply to health: \"uptimeMs\" must be an integer, got \"soon\""));
    REQUIRE(health);
    CHECK_FALSE(*health);
    CHECK(t.finish() == 0);
  }
  SECTION("output streams fail with the channel") {
    Hostile t;
    t.wait_ready();
    channel::AgentClient& client = t.agent_client();
    t.agent->on_request([](LyingAgent& a, const protocol::Request& r) {
      std::uint32_t in = a.open_stream(), out = a.open_stream(), err = a.open_stream();
      a.reply(r.id, json{{"pid", 42}, {"streams", {{"stdin", in}, {"stdout", out}, {"stderr", err}}}});
      a.send_data(out, "partial output");
      a.send_raw("\xee");
    });
    std::string output;
    int ended = 0;
    channel::ProcessEvents events;
    events.on_output = [&](channel::OutputKind, std::string_view b) { output.append(b); };
    events.on_output_end = [&](channel::OutputKind) { ended++; };
    client.start_process(argv({"x"}), events, [](Result<wire::ProcessStartResult>) {});
    // A frame header cut short is not an error yet; the guest closing mid-frame is.
    t.loop.run_until([&] { return output == "partial output"; });
    t.agent->send_raw(std::string(11, '\0'));
    CHECK_THAT(t.run(), Catch::Contains("unknown frame kind 0xee"));
    CHECK(output == "partial output");
    CHECK(ended == 2);
    CHECK(t.finish() == 0);
  }
}

TEST_CASE("lying agent: the guest going away", "[channel][hostile]") {
  Hostile t;
  t.wait_ready();
  t.agent->on_request([&t](LyingAgent& a, const protocol::Request&) { a.close(nullptr); });
  auto pending = t.call("health");
  CHECK_THAT(t.run(), Catch::Contains("the guest closed the channel"));
  REQUIRE(*pending);
  CHECK((*pending)->error);
  CHECK(t.finish() == 0);
}
