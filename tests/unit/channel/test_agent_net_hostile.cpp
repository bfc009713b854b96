// Egress inside the guest against a scripted lying agent (tests/fakes/lying_agent.*): stream
// announcements for streams it never opened, twice, with an odd id, or a SOCKS connection with no
// target each fail the channel with a reason that names the lie.
#include <catch2/catch.hpp>

#include <sys/socket.h>

#include "tests/unit/channel/lying_world.h"

using namespace lockroom;
using namespace lockroom::testing;
namespace wire = lockroom::protocol::channel;
using protocol::json;

namespace {

struct Liar : LyingWorld {
  int connections = 0;

  Liar() {
    wait_ready();
    agent_client().on_connection([this](std::unique_ptr<channel::GuestConnection>) { connections++; });
  }
  // Enables networking; the script runs in place of the agent's answer.
  std::string run(LyingAgent::Script script) {
    agent->on_request(std::move(script));
    client->enable_network({}, [](Result<wire::NetEnableResult>) {});
    REQUIRE(loop.run_until([&] { return failure.has_value(); }, 10s));
    return failure->message;
  }
};

json enabled() { return json{{"http", 3128}, {"socks", 1080}, {"dns", 53}, {"maxConnections", 256}}; }
json announce(std::uint32_t stream) { return json{{"stream", stream}, {"kind", "http"}, {"client", {{"port", 40000}}}}; }

}  // namespace

TEST_CASE("net: a lying agent announcing a stream it never opened fails the channel", "[channel][net][hostile]") {
  Liar t;
  std::string why = t.run([](LyingAgent& a, const protocol::Request& r) {
    a.reply(r.id, enabled());
    a.notify(wire::method::kNetConnection, announce(40));
  });
  CHECK_THAT(why, Catch::Contains("net.connection") && Catch::Contains("stream 40 was never opened"));
  CHECK(t.connections == 0);
  CHECK(t.finish() == 0);
}

TEST_CASE("net: a lying agent announcing one stream twice fails the channel", "[channel][net][hostile]") {
  Liar t;
  std::string why = t.run([](LyingAgent& a, const protocol::Request& r) {
    a.reply(r.id, enabled());
    std::uint32_t id = a.open_stream();
    a.notify(wire::method::kNetConnection, announce(id));
    a.notify(wire::method::kNetConnection, announce(id));
  });
  CHECK_THAT(why, Catch::Contains("announced twice"));
  CHECK(t.connections == 1);
  CHECK(t.finish() == 0);
}

TEST_CASE("net: a lying agent announcing an odd stream or a socks connection without target fails the channel", "[channel][net][hostile]") {
  SECTION("odd id") {
    Liar t;
    CHECK_THAT(t.run([](LyingAgent& a, const protocol::Request& r) {
      a.reply(r.id, enabled());
      a.notify(wire::method::kNetConnection, announce(3));
    }), Catch::Contains("must be even"));
    CHECK(t.finish() == 0);
  }
  SECTION("socks without target") {
    Liar t;
    CHECK_THAT(t.run([](LyingAgent& a, const protocol::Request& r) {
      a.reply(r.id, enabled());
      json note = announce(a.open_stream());
      note["kind"] = "socks";
      a.notify(wire::method::kNetConnection, note);
    }), Catch::Contains("\"target\" is required"));
    CHECK(t.finish() == 0);
  }
}
