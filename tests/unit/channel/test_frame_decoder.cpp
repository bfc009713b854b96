// FrameDecoder: frames in any chunking, and every header rule with its message.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "protocol/channel/frame.h"

namespace wire = lockroom::protocol::channel;
using lockroom::Result;

namespace {

struct Seen {
  wire::Kind kind;
  std::uint8_t flags;
  std::uint32_t stream;
  std::string payload;
};

std::string frame(wire::Kind kind, std::uint8_t flags, std::uint32_t stream, std::string_view payload) {
  std::string out;
  wire::append_frame(out, kind, flags, stream, payload);
  return out;
}

// A raw header with any values, for the frames append_frame refuses to make.
std::string raw_header(std::uint8_t kind, std::uint8_t flags, std::uint16_t reserved, std::uint32_t stream, std::uint32_t length) {
  std::string out{static_cast<char>(kind), static_cast<char>(flags), static_cast<char>(reserved >> 8), static_cast<char>(reserved & 0xff)};
  wire::put_u32(out, stream);
  wire::put_u32(out, length);
  return out;
}

Result<void> decode(wire::FrameDecoder& decoder, std::string_view bytes, std::vector<Seen>& seen, std::size_t chunk) {
  for (std::size_t at = 0; at < bytes.size(); at += chunk) {
    auto r = decoder.feed(bytes.substr(at, chunk), [&](const wire::Frame& f) -> Result<void> {
      seen.push_back({f.header.kind, f.header.flags, f.header.stream, std::string(f.payload)});
      return {};
    });
    if (!r) return r;
  }
  return {};
}

std::string error_of(std::string_view bytes, std::uint32_t max = wire::kMaxFramePayload) {
  wire::FrameDecoder decoder(max);
  std::vector<Seen> seen;
  auto r = decode(decoder, bytes, seen, bytes.size());
  return r ? std::string("(no error)") : r.error().message;
}

}  // namespace

TEST_CASE("frame decoder: frames survive every chunking", "[channel][frame]") {
  std::string big(wire::kMaxFramePayload, 'x');
  std::string stream = frame(wire::Kind::kControl, wire::kFlagMore, 0, R"({"jsonrpc":)") + frame(wire::Kind::kControl, 0, 0, R"("2.0"})") +
                       frame(wire::Kind::kOpen, 0, 2, "") + frame(wire::Kind::kData, 0, 2, big) +
                       frame(wire::Kind::kWindow, 0, 3, std::string("\0\0\x10\0", 4)) + frame(wire::Kind::kClose, 0, 2, "") +
                       frame(wire::Kind::kReset, 0, 5, std::string("\0\0\0\x03", 4) + "disk full");
  for (std::size_t chunk : {std::size_t{1}, std::size_t{5}, std::size_t{12}, std::size_t{13}, std::size_t{4096}, stream.size()}) {
    wire::FrameDecoder decoder;
    std::vector<Seen> seen;
    REQUIRE(decode(decoder, stream, seen, chunk));
    REQUIRE(seen.size() == 7);
    CHECK(seen[0].flags == wire::kFlagMore);
    CHECK(seen[0].payload + seen[1].payload == R"({"jsonrpc":"2.0"})");
    CHECK(seen[2].kind == wire::Kind::kOpen);
    CHECK(seen[3].payload == big);
    CHECK(wire::get_u32(seen[4].payload.data()) == 4096);
    CHECK(seen[5].kind == wire::Kind::kClose);
    CHECK(seen[6].payload.substr(4) == "disk full");
    CHECK_FALSE(decoder.mid_frame());
  }
}

TEST_CASE("frame decoder: a partial frame is reported as such", "[channel][frame]") {
  wire::FrameDecoder decoder;
  std::vector<Seen> seen;
  std::string f = frame(wire::Kind::kData, 0, 4, "hello");
  REQUIRE(decode(decoder, f.substr(0, 7), seen, 7));
  CHECK(decoder.mid_frame());
  REQUIRE(decode(decoder, f.substr(7), seen, 100));
  CHECK(seen.size() == 1);
  CHECK_FALSE(decoder.mid_frame());
}

TEST_CASE("frame decoder: each header rule has its own message", "[channel][frame]") {
  CHECK_THAT(error_of(raw_header(0x7f, 0, 0, 3, 0)), Catch::Contains("unknown frame kind 0x7f on stream 3"));
  CHECK_THAT(error_of(raw_header(0x00, 0, 0, 0, 0)), Catch::Contains("unknown frame kind 0x00"));
  CHECK_THAT(error_of(raw_header(3, 0, 0x0100, 3, 1) + "x"), Catch::Contains("reserved header bytes"));
  CHECK_THAT(error_of(raw_header(3, 0, 0, 3, 0xffffffffu)), Catch::Contains("payload of 4294967295 bytes, more than the limit of 65536"));
  CHECK_THAT(error_of(raw_header(3, 0, 0, 3, 5000), 4096), Catch::Contains("more than the limit of 4096"));
  CHECK_THAT(error_of(raw_header(1, 0x02, 0, 0, 1) + "x"), Catch::Contains("unknown flags 0x02 (only 0x01 MORE is defined)"));
  CHECK_THAT(error_of(raw_header(3, 0x01, 0, 3, 1) + "x"), Catch::Contains("this kind takes no flags"));
  CHECK_THAT(error_of(raw_header(1, 0, 0, 7, 1) + "x"), Catch::Contains("control messages travel on stream 0 only"));
  CHECK_THAT(error_of(raw_header(3, 0, 0, 0, 1) + "x"), Catch::Contains("stream 0 carries only CONTROL frames"));
  CHECK_THAT(error_of(raw_header(3, 0, 0, 3, 0)), Catch::Contains("DATA frame on stream 3 has an empty payload"));
  CHECK_THAT(error_of(raw_header(2, 0, 0, 3, 1) + "x"), Catch::Contains("must carry none"));
  CHECK_THAT(error_of(raw_header(4, 0, 0, 3, 3) + "xyz"), Catch::Contains("exactly 4"));
  CHECK_THAT(error_of(raw_header(6, 0, 0, 3, 2) + "xy"), Catch::Contains("4 to 260"));
  CHECK_THAT(error_of(raw_header(6, 0, 0, 3, 300) + std::string(300, 'r')), Catch::Contains("4 to 260"));
}

TEST_CASE("frame decoder: an oversized length is refused before any payload arrives", "[channel][frame]") {
  wire::FrameDecoder decoder;
  std::vector<Seen> seen;
  auto r = decode(decoder, raw_header(3, 0, 0, 3, 1u << 30), seen, 12);
  REQUIRE_FALSE(r);
  CHECK(decoder.failed());
  // Once failed, always failed: the byte stream cannot be trusted again.
  auto again = decoder.feed(frame(wire::Kind::kData, 0, 3, "x"), [](const wire::Frame&) -> Result<void> { return {}; });
  REQUIRE_FALSE(again);
  CHECK(again.error().message == r.error().message);
  decoder.reset();
  CHECK(decode(decoder, frame(wire::Kind::kData, 0, 3, "x"), seen, 13));
}

TEST_CASE("frame decoder: an error from the sink stops decoding", "[channel][frame]") {
  wire::FrameDecoder decoder;
  int calls = 0;
  std::string two = frame(wire::Kind::kData, 0, 3, "a") + frame(wire::Kind::kData, 0, 3, "b");
  auto r = decoder.feed(two, [&](const wire::Frame&) -> Result<void> {
    ++calls;
    return lockroom::make_error(lockroom::ErrorCode::kInvalidInput, "no thanks");
  });
  REQUIRE_FALSE(r);
  CHECK(r.error().message == "no thanks");
  CHECK(calls == 1);
}

TEST_CASE("frame decoder: garbage is refused from its first byte", "[channel][frame]") {
  wire::FrameDecoder decoder;
  std::vector<Seen> seen;
  auto r = decode(decoder, "ready\n", seen, 6);  // a line-based peer, not an agent
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message, Catch::Contains("unknown frame kind 0x72"));
  wire::FrameDecoder second;
  auto reserved = decode(second, std::string("\x03\x00\x00\x01", 4), seen, 4);
  REQUIRE_FALSE(reserved);
  CHECK_THAT(reserved.error().message, Catch::Contains("reserved header bytes"));
}
