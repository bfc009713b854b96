// Content-Length framing (server/rpc/framing.h) against hostile input: bad and huge lengths,
// oversized bodies and header blocks skipped without buffering, resynchronisation, linear work.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "server/rpc/framing.h"
#include "tests/unit/alloc_counter.h"
#include "tests/unit/framing_util.h"
#include "tests/unit/run_bounded.h"

using lockroom::rpc::ContentLengthFraming;
using lockroom::rpc::FrameEvent;
using lockroom::rpc::kMaxHeaderBytes;
using namespace lockroom::testing;
using Strings = std::vector<std::string>;

namespace {
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
}  // namespace

// ---------------------------------------------------------------- lengths and limits

TEST_CASE("content-length: a non-numeric Content-Length is an error that quotes it", "[framing]") {
  for (std::string value : {"abc", "-1", "+5", "1.5", "0x10", "5 5", "", "２"}) {
    ContentLengthFraming framing;
    INFO("value '" << value << "'");
    auto out = feed_all(framing, "Content-Length: " + value + "\r\n\r\n");
    REQUIRE(out.size() == 1);
    CHECK(out[0].kind == FrameEvent::Kind::kError);
    CHECK(has(out[0].text, "Content-Length must be a decimal byte count"));
  }
  ContentLengthFraming framing;
  auto out = feed_all(framing, "Content-Length: abc\r\n\r\n");
  CHECK(has(out.at(0).text, "\"abc\""));
}

TEST_CASE("content-length: a 20-digit Content-Length is rejected rather than overflowing", "[framing]") {
  ContentLengthFraming framing;
  // 12345678901234567890 fits in 64 bits; 99999999999999999999 does not. Both have 20 digits.
  for (std::string value : {"12345678901234567890", "99999999999999999999", "00000000000000000002"}) {
    INFO(value);
    auto out = feed_all(framing, "Content-Length: " + value + "\r\n\r\n");
    REQUIRE(out.size() == 1);
    CHECK(out[0].kind == FrameEvent::Kind::kError);
    CHECK(has(out[0].text, value));
  }
  // A 19-digit value with leading zeros is an ordinary length, and is found after the errors.
  CHECK(render(feed_all(framing, "Content-Length: 0000000000000000002\r\n\r\n{}")) == Strings{"M:{}"});
  CHECK_FALSE(framing.mid_message());
}

TEST_CASE("content-length: a huge Content-Length is refused by size and its body skipped, not buffered", "[framing]") {
  ContentLengthFraming framing(1024);
  auto out = feed_all(framing, "Content-Length: 9999999999999999999\r\n\r\n{\"jsonrpc\":");
  REQUIRE(out.size() == 1);
  CHECK(out[0].kind == FrameEvent::Kind::kError);
  CHECK(has(out[0].text, "9999999999999999999 bytes exceeds the limit of 1024"));
  CHECK(framing.mid_message());
  std::string chunk(64 << 10, 'x');
  AllocationScope allocations;
  for (int i = 0; i < 64; ++i) {
    auto more = feed_all(framing, chunk);
    REQUIRE(more.empty());
  }
  CHECK(allocations.bytes() < (64u << 10));
  CHECK(framing.mid_message());
}

TEST_CASE("content-length: duplicate Content-Length headers must agree", "[framing]") {
  ContentLengthFraming framing;
  auto out = feed_all(framing, "Content-Length: 2\r\nContent-Length: 3\r\n\r\n");
  REQUIRE(out.size() == 1);
  CHECK(out[0].kind == FrameEvent::Kind::kError);
  CHECK(has(out[0].text, "two different Content-Length values"));
  CHECK(render(feed_all(framing, "Content-Length: 2\r\ncontent-length: 2\r\n\r\n{}")) == Strings{"M:{}"});
}

TEST_CASE("content-length: an oversized body is skipped without buffering it and the next message arrives",
          "[framing]") {
  constexpr std::size_t kLimit = 4096;
  constexpr std::size_t kBig = 8u << 20;  // 8 MiB, 2048 times the limit
  ContentLengthFraming framing(kLimit);
  std::vector<FrameEvent> out;
  framing.feed("Content-Length: " + std::to_string(kBig) + "\r\n\r\n", out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].kind == FrameEvent::Kind::kError);
  CHECK(has(out[0].text, std::to_string(kBig) + " bytes exceeds the limit of 4096"));
  out.clear();

  std::string chunk(32 << 10, 'b');
  std::size_t sent = 0;
  AllocationScope allocations;
  while (sent + chunk.size() < kBig) {
    framing.feed(chunk, out);
    sent += chunk.size();
    REQUIRE(framing.mid_message());
  }
  CHECK(allocations.bytes() < kLimit);  // nothing of the skipped body was kept
  CHECK(out.empty());
  // The last bytes of the skipped body and the next message arrive in one read.
  framing.feed(std::string(kBig - sent, 'b') + frame("{\"next\":true}"), out);
  CHECK(render(out) == Strings{"M:{\"next\":true}"});
  CHECK_FALSE(framing.mid_message());
}

TEST_CASE("content-length: a body of exactly the limit is delivered, one byte more is not", "[framing]") {
  ContentLengthFraming framing(8);
  CHECK(render(feed_all(framing, frame("12345678"))) == Strings{"M:12345678"});
  auto out = feed_all(framing, frame("123456789") + frame("1"));
  REQUIRE(out.size() == 2);
  CHECK(out[0].kind == FrameEvent::Kind::kError);
  CHECK(render({out[1]}) == Strings{"M:1"});
}

TEST_CASE("content-length: a header block over 8 KiB is an error, then input resyncs at the next Content-Length",
          "[framing]") {
  // A header line of junk with no end: the decoder must give up on it at 8 KiB.
  // It is longer than the limit plus the largest piece, so every chunking below hits the limit
  // before the next frame arrives.
  std::string junk = "X-Junk: " + std::string(kMaxHeaderBytes + 5000, 'j');
  std::string stream = junk + frame("{\"after\":1}");
  for (std::size_t piece : {std::size_t(1), std::size_t(7), std::size_t(1000), std::size_t(4096)}) {
    ContentLengthFraming framing;
    auto out = feed_in_pieces_of(framing, stream, piece);
    INFO("pieces of " << piece);
    REQUIRE(out.size() == 2);
    CHECK(out[0].kind == FrameEvent::Kind::kError);
    CHECK(has(out[0].text, "no blank line within 8192 bytes"));
    CHECK(render({out[1]}) == Strings{"M:{\"after\":1}"});
    CHECK_FALSE(framing.mid_message());
  }
}

TEST_CASE("content-length: resync finds a Content-Length split across reads, in any letter case", "[framing]") {
  ContentLengthFraming framing;
  std::vector<FrameEvent> out;
  framing.feed(std::string(kMaxHeaderBytes + 1, 'z'), out);
  REQUIRE(errors(out).size() == 1);
  CHECK(framing.mid_message());
  framing.feed(std::string(100000, 'z') + "\r\n\r\nCONTENT-LEN", out);
  framing.feed("GTH: 2\r\n\r\n{}", out);
  CHECK(messages(out) == Strings{"{}"});
  CHECK(errors(out).size() == 1);
}

TEST_CASE("content-length: an over-long header block that starts with Content-Length does not hang the decoder",
          "[framing]") {
  // "Content-Length: 5" followed by more than 8 KiB without a blank line: after reporting the
  // over-long block, the search for the next "Content-Length:" must not find the same one at
  // offset 0 again (that once looped forever, appending an error event each time). Run in a
  // bounded child so a regression fails instead of hanging the suite.
  auto outcome = run_bounded(
      [] {
        ContentLengthFraming framing;
        std::vector<FrameEvent> out;
        framing.feed("Content-Length: 5\r\nX-Pad: " + std::string(kMaxHeaderBytes + 100, 'p'), out);
        framing.feed("\r\n\r\n" + frame("{}"), out);
        return !errors(out).empty() && !out.empty() && out.back().kind == FrameEvent::Kind::kMessage &&
               out.back().text == "{}";
      },
      std::chrono::seconds(5), rlim_t(2) << 30);
  INFO("the decoder " << outcome_name(outcome));
  CHECK(outcome == ChildOutcome::kPassed);
}

TEST_CASE("content-length: [bug] a header block is judged the same however its bytes are chunked", "[framing][bug]") {
  // framing.h promises arbitrary chunking. Two header blocks that decode differently depending on
  // how the reads happened to split them:
  //  - 9 KiB of header lines with the blank line arriving in the same read is accepted, but fed
  //    in small reads it is refused at 8 KiB;
  //  - a stray '\r' before "Content-Length" is dropped when it arrives alone, but makes the
  //    header unreadable when it arrives together with the header.
  std::string long_header = "X-Pad: " + std::string(kMaxHeaderBytes + 1000, 'p') + "\r\n" + frame("{}");
  std::string stray_cr = "\r" + frame("{}");
  for (const std::string& stream : {long_header, stray_cr}) {
    ContentLengthFraming whole;
    ContentLengthFraming bytewise;
    INFO("stream starting " << stream.substr(0, 20));
    CHECK(render(feed_all(whole, stream)) == render(feed_bytewise(bytewise, stream)));
  }
}

// ---------------------------------------------------------------- work per read

TEST_CASE("content-length: many small messages in one read are decoded in linear work", "[framing]") {
  // A single read holding many small messages (64 KiB reads are what the transport delivers).
  // Copying the rest of the read after each header would cost O(n^2): ~1,000 messages of 64
  // bytes in a 64 KiB read once allocated ~32 MB.
  std::string stream;
  while (stream.size() < (64u << 10)) stream += frame(R"({"jsonrpc":"2.0","method":"n","params":[1,2]})");
  ContentLengthFraming framing;
  std::vector<FrameEvent> out;
  out.reserve(4096);
  AllocationScope allocations;
  framing.feed(stream, out);
  std::size_t used = allocations.bytes();
  CHECK(out.size() > 900);
  INFO("allocated " << used << " bytes to decode " << stream.size() << " bytes");
  CHECK(used < 8 * stream.size());  // the messages themselves take about 1x
}
