// Session: stream lifecycle, credit, resets and control reassembly, between two in-memory ends.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "protocol/channel/session.h"

namespace wire = lockroom::protocol::channel;
using lockroom::Result;
using Type = wire::Event::Type;

namespace {

struct Got {
  Type type;
  std::uint32_t stream;
  std::string data;
  std::uint32_t code;
  bool finished;
};

// Delivers everything `from` has queued to `to`; returns the events, or the first error.
Result<std::vector<Got>> deliver(wire::Session& from, wire::Session& to) {
  std::vector<Got> got;
  wire::FrameDecoder decoder;
  std::string bytes = from.take_output();
  auto r = decoder.feed(bytes, [&](const wire::Frame& f) -> Result<void> {
    auto e = to.receive(f);
    if (!e) return e.error();
    if (e->type != Type::kNone) got.push_back({e->type, e->stream, std::string(e->data), e->code, e->finished});
    return {};
  });
  if (!r) return r.error();
  return got;
}

std::string receive_error(wire::Session& to, wire::Kind kind, std::uint8_t flags, std::uint32_t stream, std::string_view payload) {
  wire::Frame frame{{kind, flags, stream, static_cast<std::uint32_t>(payload.size())}, payload};
  auto e = to.receive(frame);
  return e ? std::string("(no error)") : e.error().message;
}

std::string u32(std::uint32_t v) {
  std::string s;
  wire::put_u32(s, v);
  return s;
}

struct Pair {
  wire::Settings settings;
  wire::Session host{wire::Side::kHost, settings};
  wire::Session agent{wire::Side::kAgent, settings};
  Pair() {
    REQUIRE(host.establish(agent.mine()));
    REQUIRE(agent.establish(host.mine()));
  }
};

}  // namespace

TEST_CASE("session: only CONTROL frames before the handshake", "[channel][session]") {
  wire::Session host(wire::Side::kHost, {});
  CHECK_THAT(receive_error(host, wire::Kind::kOpen, 0, 2, ""), Catch::Contains("before the hello handshake finished"));
  wire::Frame control{{wire::Kind::kControl, 0, 0, 2}, "{}"};
  auto e = host.receive(control);
  REQUIRE(e);
  CHECK(e->type == Type::kControl);
  CHECK(e->data == "{}");
}

TEST_CASE("session: settings outside the protocol's bounds are refused", "[channel][session]") {
  wire::Session host(wire::Side::kHost, {});
  wire::Settings bad;
  bad.max_frame = 100;
  auto r = host.establish(bad);
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message, Catch::Contains("\"maxFrame\" is 100, outside the protocol's range [4096, 65536]"));
  bad = {};
  bad.stream_window = 1u << 30;
  CHECK_FALSE(host.establish(bad));
  CHECK_FALSE(host.established());
}

TEST_CASE("session: a stream opens, carries data both ways and closes", "[channel][session]") {
  Pair p;
  auto id = p.agent.open_stream();
  REQUIRE(id);
  CHECK(*id == 2);
  CHECK(p.agent.send_data(*id, "from agent") == 10);
  auto got = deliver(p.agent, p.host);
  REQUIRE(got);
  REQUIRE(got->size() == 2);
  CHECK((*got)[0].type == Type::kOpened);
  CHECK((*got)[1].data == "from agent");

  CHECK(p.host.send_data(*id, "from host") == 9);
  CHECK_FALSE(p.host.close_stream(*id));
  got = deliver(p.host, p.agent);
  REQUIRE(got);
  REQUIRE(got->size() == 2);
  CHECK((*got)[0].data == "from host");
  CHECK((*got)[1].type == Type::kPeerClosed);
  CHECK_FALSE((*got)[1].finished);

  CHECK(p.agent.close_stream(*id));  // both directions closed: forgotten at once
  CHECK(p.agent.stream_count() == 0);
  got = deliver(p.agent, p.host);
  REQUIRE(got);
  CHECK((*got)[0].finished);
  CHECK(p.host.stream_count() == 0);
  // Now it is closed, not unknown.
  CHECK_THAT(receive_error(p.host, wire::Kind::kData, 0, 2, "late"), Catch::Contains("already closed: data on a closed stream"));
  CHECK_THAT(receive_error(p.host, wire::Kind::kData, 0, 8, "x"), Catch::Contains("DATA frame on stream 8, which was never opened"));
  // Credit racing a close is harmless.
  wire::Frame window{{wire::Kind::kWindow, 0, 2, 4}, u32(10)};
  CHECK(p.host.receive(window));
}

TEST_CASE("session: ids follow parity and only increase", "[channel][session]") {
  Pair p;
  CHECK_THAT(receive_error(p.host, wire::Kind::kOpen, 0, 3, ""), Catch::Contains("belongs to this side"));
  wire::Frame open4{{wire::Kind::kOpen, 0, 4, 0}, ""};
  REQUIRE(p.host.receive(open4));
  CHECK_THAT(receive_error(p.host, wire::Kind::kOpen, 0, 2, ""), Catch::Contains("stream ids must increase"));
  CHECK_THAT(receive_error(p.host, wire::Kind::kOpen, 0, 4, ""), Catch::Contains("stream ids must increase"));
}

TEST_CASE("session: the stream limit holds against the peer", "[channel][session]") {
  wire::Settings small;
  small.max_streams = 2;
  wire::Session host(wire::Side::kHost, small);
  REQUIRE(host.establish(wire::Settings{}));
  for (std::uint32_t id : {2u, 4u}) {
    wire::Frame open{{wire::Kind::kOpen, 0, id, 0}, ""};
    REQUIRE(host.receive(open));
  }
  CHECK_THAT(receive_error(host, wire::Kind::kOpen, 0, 6, ""), Catch::Contains("exceeds the limit of 2 open streams"));
}

TEST_CASE("session: credit stops a sender and comes back as the reader consumes", "[channel][session]") {
  wire::Settings s;
  s.stream_window = 8192;
  wire::Session host(wire::Side::kHost, s), agent(wire::Side::kAgent, s);
  REQUIRE(host.establish(s));
  REQUIRE(agent.establish(s));
  auto id = *agent.open_stream();
  std::string big(20000, 'z');
  CHECK(agent.send_data(id, big) == 8192);
  CHECK(agent.send_credit(id) == 0);
  CHECK(agent.send_data(id, big) == 0);
  auto got = deliver(agent, host);
  REQUIRE(got);
  host.consumed(id, 4095);
  CHECK(host.output_size() == 0);  // under half a window: no WINDOW yet
  host.consumed(id, 1);
  got = deliver(host, agent);
  REQUIRE(got);
  REQUIRE(got->size() == 1);
  CHECK((*got)[0].type == Type::kWritable);
  CHECK(agent.send_credit(id) == 4096);
}

TEST_CASE("session: data beyond credit and credit overflow are violations", "[channel][session]") {
  wire::Settings s;
  s.stream_window = 4096;
  wire::Session host(wire::Side::kHost, s);
  REQUIRE(host.establish(s));
  wire::Frame open{{wire::Kind::kOpen, 0, 2, 0}, ""};
  REQUIRE(host.receive(open));
  std::string too_much(4097, 'x');
  CHECK_THAT(receive_error(host, wire::Kind::kData, 0, 2, too_much),
             Catch::Contains("carries 4097 bytes but the stream had only 4096 bytes of credit: the peer ignores flow control"));
  CHECK_THAT(receive_error(host, wire::Kind::kWindow, 0, 2, u32(1)), Catch::Contains("credit overflow"));
  CHECK_THAT(receive_error(host, wire::Kind::kWindow, 0, 2, u32(0)), Catch::Contains("grants 0 bytes"));
}

TEST_CASE("session: data after a half-close and a double close are violations", "[channel][session]") {
  Pair p;
  auto id = *p.agent.open_stream();
  REQUIRE(deliver(p.agent, p.host));
  p.agent.close_stream(id);
  REQUIRE(deliver(p.agent, p.host));
  CHECK_THAT(receive_error(p.host, wire::Kind::kData, 0, id, "x"), Catch::Contains("after the peer half-closed that stream"));
  CHECK_THAT(receive_error(p.host, wire::Kind::kClose, 0, id, ""), Catch::Contains("already half-closed"));
}

TEST_CASE("session: a reset is acknowledged and frames that crossed it are dropped", "[channel][session]") {
  Pair p;
  auto id = *p.agent.open_stream();
  REQUIRE(deliver(p.agent, p.host));
  p.host.reset_stream(id, wire::reset_code::kCancelled, "not wanted");
  CHECK_FALSE(p.host.is_open(id));
  p.agent.send_data(id, "crossing");  // sent before the agent saw the reset
  auto crossing = deliver(p.agent, p.host);
  REQUIRE(crossing);
  CHECK(crossing->empty());

  auto got = deliver(p.host, p.agent);
  REQUIRE(got);
  REQUIRE(got->size() == 1);
  CHECK((*got)[0].type == Type::kReset);
  CHECK((*got)[0].code == wire::reset_code::kCancelled);
  CHECK((*got)[0].data == "not wanted");
  CHECK(p.agent.stream_count() == 0);
  auto ack = deliver(p.agent, p.host);  // the agent's RESET ack
  REQUIRE(ack);
  CHECK(ack->empty());
  CHECK(p.host.stream_count() == 0);
}

TEST_CASE("session: control messages are fragmented and reassembled within bounds", "[channel][session]") {
  Pair p;
  std::string message(200000, 'm');
  REQUIRE(p.host.send_control(message));
  auto got = deliver(p.host, p.agent);
  REQUIRE(got);
  REQUIRE(got->size() == 1);
  CHECK((*got)[0].type == Type::kControl);
  CHECK((*got)[0].data == message);

  wire::Settings tight;
  tight.max_control = wire::kMinControl;
  wire::Session small(wire::Side::kHost, tight);
  std::string fragment(60000, 'f');
  wire::Frame more{{wire::Kind::kControl, wire::kFlagMore, 0, 60000}, fragment};
  REQUIRE(small.receive(more));
  CHECK_THAT(receive_error(small, wire::Kind::kControl, 0, 0, fragment),
             Catch::Contains("a control message grew to 120000 bytes, more than the limit of 65536"));

  auto too_big = p.host.send_control(std::string(p.agent.mine().max_control + 1, 'x'));
  REQUIRE_FALSE(too_big);
  CHECK(too_big.error().code == lockroom::ErrorCode::kLimitExceeded);
}

TEST_CASE("session: frames are cut at the peer's max frame", "[channel][session]") {
  wire::Settings peer;
  peer.max_frame = 4096;
  wire::Session host(wire::Side::kHost, {});
  REQUIRE(host.establish(peer));
  wire::Frame open{{wire::Kind::kOpen, 0, 2, 0}, ""};
  REQUIRE(host.receive(open));
  CHECK(host.send_data(2, std::string(10000, 'd')) == 10000);
  std::string out = host.take_output();
  CHECK(out.size() == 10000 + 3 * wire::kHeaderSize);
}
