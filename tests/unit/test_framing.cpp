// Framing (server/rpc/framing.h): Content-Length and ndjson decoders under every chunking, their
// error events and resynchronisation, and encode().
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
using lockroom::rpc::FramingKind;
using lockroom::rpc::kMaxHeaderBytes;
using lockroom::rpc::make_framing;
using lockroom::rpc::NdjsonFraming;
using namespace lockroom::testing;
using Strings = std::vector<std::string>;

namespace {
const std::string kBody1 = R"({"jsonrpc":"2.0","id":1,"method":"lockroom/echo","params":{"text":"h\u00e9"}})";
const std::string kBody2 = R"({"jsonrpc":"2.0","method":"initialized","params":{}})";
const std::string kStream = frame(kBody1) + frame(kBody2);

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
}  // namespace

// ---------------------------------------------------------------- Content-Length: chunking

TEST_CASE("content-length: a 2-message stream fed one byte at a time yields both, mid_message only inside frames",
          "[framing]") {
  ContentLengthFraming framing;
  std::vector<FrameEvent> out;
  const std::size_t end1 = frame(kBody1).size();
  for (std::size_t i = 0; i < kStream.size(); ++i) {
    framing.feed(std::string_view(kStream).substr(i, 1), out);
    std::size_t fed = i + 1;
    INFO("after " << fed << " bytes");
    CHECK(framing.mid_message() == (fed != end1 && fed != kStream.size()));
    CHECK(out.size() == (fed >= kStream.size() ? 2u : fed >= end1 ? 1u : 0u));
  }
  CHECK(render(out) == Strings{"M:" + kBody1, "M:" + kBody2});
}

TEST_CASE("content-length: every 2-way split of a 2-message stream yields the same two messages", "[framing]") {
  for (std::size_t cut = 0; cut <= kStream.size(); ++cut) {
    ContentLengthFraming framing;
    auto out = feed_split(framing, kStream, {cut});
    INFO("split at " << cut);
    REQUIRE(render(out) == Strings{"M:" + kBody1, "M:" + kBody2});
    CHECK_FALSE(framing.mid_message());
  }
}

TEST_CASE("content-length: every 3-way split of a 2-message stream yields the same two messages", "[framing]") {
  for (std::size_t a = 0; a <= kStream.size(); ++a) {
    for (std::size_t b = a; b <= kStream.size(); ++b) {
      ContentLengthFraming framing;
      auto out = feed_split(framing, kStream, {a, b});
      if (render(out) != Strings{"M:" + kBody1, "M:" + kBody2}) {
        FAIL("split at " << a << " and " << b << " gave " << render(out).size() << " events");
      }
    }
  }
}

TEST_CASE("content-length: several messages in one read come out in order", "[framing]") {
  ContentLengthFraming framing;
  std::string stream;
  Strings expected;
  for (int i = 0; i < 50; ++i) {
    std::string body = R"({"jsonrpc":"2.0","id":)" + std::to_string(i) + R"(,"method":"m"})";
    stream += frame(body);
    expected.push_back("M:" + body);
  }
  CHECK(render(feed_all(framing, stream)) == expected);
  CHECK_FALSE(framing.mid_message());
}

TEST_CASE("content-length: a header that arrives in pieces waits for its blank line", "[framing]") {
  ContentLengthFraming framing;
  std::vector<FrameEvent> out;
  framing.feed("Content-Le", out);
  CHECK(out.empty());
  CHECK(framing.mid_message());
  framing.feed("ngth: 2\r", out);
  framing.feed("\n", out);
  CHECK(out.empty());
  framing.feed("\r", out);
  CHECK(out.empty());
  framing.feed("\n{", out);
  CHECK(out.empty());
  CHECK(framing.mid_message());
  framing.feed("}", out);
  CHECK(render(out) == Strings{"M:{}"});
  CHECK_FALSE(framing.mid_message());
}

TEST_CASE("content-length: header lines may end in a bare LF", "[framing]") {
  ContentLengthFraming framing;
  CHECK(render(feed_all(framing, "Content-Length: 2\n\n{}")) == Strings{"M:{}"});
  CHECK(render(feed_all(framing, "Content-Length: 3\nContent-Type: application/vscode-jsonrpc\n\n[1]")) ==
        Strings{"M:[1]"});
  CHECK(render(feed_all(framing, "Content-Length: 2\r\n\n{}")) == Strings{"M:{}"});
  ContentLengthFraming bytewise;
  CHECK(render(feed_bytewise(bytewise, "Content-Length: 2\n\n{}Content-Length: 1\n\n7")) == Strings{"M:{}", "M:7"});
}

TEST_CASE("content-length: stray line breaks between messages are ignored", "[framing]") {
  std::string stream = frame("{}") + "\r\n\r\n" + frame("[]") + "\n" + frame("1") + "\r\n";
  ContentLengthFraming whole;
  CHECK(render(feed_all(whole, stream)) == Strings{"M:{}", "M:[]", "M:1"});
  CHECK_FALSE(whole.mid_message());
  ContentLengthFraming bytewise;
  CHECK(render(feed_bytewise(bytewise, stream)) == Strings{"M:{}", "M:[]", "M:1"});
  CHECK_FALSE(bytewise.mid_message());
}

TEST_CASE("content-length: Content-Type with utf-8, utf8 or no charset is accepted", "[framing]") {
  for (std::string type : {"application/vscode-jsonrpc; charset=utf-8", "application/vscode-jsonrpc; charset=utf8",
                           "application/vscode-jsonrpc", "application/vscode-jsonrpc; charset=UTF-8",
                           "application/vscode-jsonrpc; charset=\"utf-8\""}) {
    ContentLengthFraming framing;
    INFO(type);
    CHECK(render(feed_all(framing, "Content-Length: 2\r\nContent-Type: " + type + "\r\n\r\n{}")) == Strings{"M:{}"});
    // The header order does not matter.
    CHECK(render(feed_all(framing, "Content-Type: " + type + "\r\nContent-Length: 2\r\n\r\n[]")) == Strings{"M:[]"});
  }
}

TEST_CASE("content-length: a charset other than utf-8 is an error that names it", "[framing]") {
  ContentLengthFraming framing;
  auto out = feed_all(framing, "Content-Length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=latin1\r\n\r\n");
  REQUIRE(out.size() == 1);
  CHECK(out[0].kind == FrameEvent::Kind::kError);
  CHECK(has(out[0].text, "latin1"));
  CHECK(has(out[0].text, "utf-8"));
}

TEST_CASE("content-length: after an unsupported charset the body is skipped and the next message delivered",
          "[framing]") {
  // The header is complete and its Content-Length valid, so the decoder knows where the refused
  // body ends; reading that body as the next header would lose the following message.
  ContentLengthFraming framing;
  auto out = feed_all(framing, "Content-Length: 7\r\nContent-Type: text/plain; charset=latin1\r\n\r\n" +
                                   std::string(R"({"a":1})") + frame("{}"));
  CHECK(errors(out).size() == 1);
  CHECK(messages(out) == Strings{"{}"});
}

TEST_CASE("content-length: [bug] a Content-Type parameter after the charset does not make it unsupported",
          "[framing][bug]") {
  // Media types may carry several parameters (RFC 9110 section 8.3.1); only the charset's own value counts.
  ContentLengthFraming framing;
  auto out = feed_all(framing, "Content-Length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8; x=1\r\n\r\n{}");
  CHECK(render(out) == Strings{"M:{}"});
}

TEST_CASE("content-length: header names are case-insensitive", "[framing]") {
  for (std::string header : {"content-length: 2", "CONTENT-LENGTH: 2", "Content-length:2", "cOnTeNt-LeNgTh :  2  "}) {
    ContentLengthFraming framing;
    INFO(header);
    CHECK(render(feed_all(framing, header + "\r\nCONTENT-TYPE: application/vscode-jsonrpc; CHARSET=UTF-8\r\n\r\n{}")) ==
          Strings{"M:{}"});
  }
}

TEST_CASE("content-length: unknown headers are ignored", "[framing]") {
  ContentLengthFraming framing;
  CHECK(render(feed_all(framing, "X-Trace: 42\r\nContent-Length: 2\r\nUser-Agent: test\r\n\r\n{}")) == Strings{"M:{}"});
}

TEST_CASE("content-length: a missing Content-Length is an error and the next message still arrives", "[framing]") {
  ContentLengthFraming framing;
  auto out = feed_all(framing, "Content-Type: application/vscode-jsonrpc\r\n\r\n" + frame("{}"));
  REQUIRE(out.size() == 2);
  CHECK(out[0].kind == FrameEvent::Kind::kError);
  CHECK(has(out[0].text, "Content-Length header is missing"));
  CHECK(render({out[1]}) == Strings{"M:{}"});
}

TEST_CASE("content-length: a header line without a colon is an error that quotes it", "[framing]") {
  ContentLengthFraming framing;
  auto out = feed_all(framing, "hello world\r\n\r\n");
  REQUIRE(out.size() == 1);
  CHECK(out[0].kind == FrameEvent::Kind::kError);
  CHECK(has(out[0].text, "\"hello world\" is not a \"Name: value\" line"));
}

TEST_CASE("content-length: a bad header line next to a valid Content-Length skips exactly that body", "[framing]") {
  ContentLengthFraming framing;
  auto out = feed_all(framing, "Content-Length: 7\r\nhello world\r\n\r\n{\"a\":1}" + frame("[]"));
  REQUIRE(out.size() == 2);
  CHECK(out[0].kind == FrameEvent::Kind::kError);
  CHECK(has(out[0].text, "\"hello world\""));
  CHECK(render({out[1]}) == Strings{"M:[]"});
  CHECK_FALSE(framing.mid_message());
}

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

TEST_CASE("content-length: a zero-length body is delivered as an empty message", "[framing]") {
  ContentLengthFraming framing;
  CHECK(render(feed_all(framing, "Content-Length: 0\r\n\r\n" + frame("{}"))) == Strings{"M:", "M:{}"});
  ContentLengthFraming bytewise;
  CHECK(render(feed_bytewise(bytewise, "Content-Length: 0\r\n\r\n" + frame("{}"))) == Strings{"M:", "M:{}"});
  CHECK_FALSE(bytewise.mid_message());
}

TEST_CASE("content-length: bodies that are not valid UTF-8 are delivered unchanged", "[framing]") {
  const std::string bad = "{\"s\":\"\xff\xfe\xc3\x28\"}";
  ContentLengthFraming framing;
  auto out = feed_all(framing, frame(bad) + frame(std::string("\0\x01", 2)));
  CHECK(render(out) == Strings{"M:" + bad, "M:" + std::string("\0\x01", 2)});
}

TEST_CASE("content-length: encode() writes the byte count and a blank line, and round-trips", "[framing]") {
  ContentLengthFraming framing;
  CHECK(framing.encode("{}") == "Content-Length: 2\r\n\r\n{}");
  CHECK(framing.encode("") == "Content-Length: 0\r\n\r\n");
  // Byte count, not character count: "é" is two bytes.
  CHECK(framing.encode("\"\xc3\xa9\"") == "Content-Length: 4\r\n\r\n\"\xc3\xa9\"");
  std::string big(100000, 'q');
  ContentLengthFraming decoder;
  CHECK(render(feed_in_pieces_of(decoder, framing.encode(big) + framing.encode("x"), 4093)) ==
        Strings{"M:" + big, "M:x"});
}

// ---------------------------------------------------------------- ndjson

TEST_CASE("ndjson: lines split at every byte boundary yield the same messages", "[framing]") {
  const std::string stream = kBody1 + "\n" + kBody2 + "\n";
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    NdjsonFraming framing;
    INFO("split at " << cut);
    REQUIRE(render(feed_split(framing, stream, {cut})) == Strings{"M:" + kBody1, "M:" + kBody2});
    CHECK_FALSE(framing.mid_message());
  }
  NdjsonFraming bytewise;
  std::vector<FrameEvent> out;
  for (std::size_t i = 0; i < stream.size(); ++i) {
    bytewise.feed(std::string_view(stream).substr(i, 1), out);
    bool at_line_end = stream[i] == '\n';
    CHECK(bytewise.mid_message() == !at_line_end);
  }
  CHECK(render(out) == Strings{"M:" + kBody1, "M:" + kBody2});
}

TEST_CASE("ndjson: CRLF line ends are stripped", "[framing]") {
  NdjsonFraming framing;
  CHECK(render(feed_all(framing, "{\"a\":1}\r\n[2]\r\n")) == Strings{"M:{\"a\":1}", "M:[2]"});
  NdjsonFraming bytewise;
  CHECK(render(feed_bytewise(bytewise, "{\"a\":1}\r\n[2]\r\n")) == Strings{"M:{\"a\":1}", "M:[2]"});
}

TEST_CASE("ndjson: blank and whitespace-only lines are skipped", "[framing]") {
  NdjsonFraming framing;
  CHECK(render(feed_all(framing, "\n\n  \n\t\r\n{}\n\r\n \t \n[]\n")) == Strings{"M:{}", "M:[]"});
  CHECK_FALSE(framing.mid_message());
}

TEST_CASE("ndjson: a line without its newline yet is held back", "[framing]") {
  NdjsonFraming framing;
  CHECK(feed_all(framing, "{\"a\":").empty());
  CHECK(framing.mid_message());
  CHECK(render(feed_all(framing, "1}\n{")) == Strings{"M:{\"a\":1}"});
  CHECK(framing.mid_message());
}

TEST_CASE("ndjson: an over-long line is skipped with one error and the next line arrives", "[framing]") {
  const std::string stream = std::string(100, 'x') + "\n{}\n";
  for (std::size_t piece : {std::size_t(1), std::size_t(3), std::size_t(16), std::size_t(17), stream.size()}) {
    NdjsonFraming framing(16);
    INFO("pieces of " << piece);
    auto out = feed_in_pieces_of(framing, stream, piece);
    REQUIRE(out.size() == 2);
    CHECK(out[0].kind == FrameEvent::Kind::kError);
    CHECK(has(out[0].text, "longer than the limit of 16 bytes"));
    CHECK(render({out[1]}) == Strings{"M:{}"});
    CHECK_FALSE(framing.mid_message());
  }
}

TEST_CASE("ndjson: a line of exactly the limit is delivered, one byte more is not", "[framing]") {
  NdjsonFraming framing(4);
  CHECK(render(feed_all(framing, "1234\n")) == Strings{"M:1234"});
  auto out = feed_all(framing, "12345\n1\n");
  REQUIRE(out.size() == 2);
  CHECK(out[0].kind == FrameEvent::Kind::kError);
  CHECK(render({out[1]}) == Strings{"M:1"});
}

TEST_CASE("ndjson: an over-long line is skipped without buffering it", "[framing]") {
  NdjsonFraming framing(4096);
  std::vector<FrameEvent> out;
  std::string chunk(32 << 10, 'y');
  AllocationScope allocations;
  for (int i = 0; i < 256; ++i) framing.feed(chunk, out);  // 8 MiB on one line
  CHECK(allocations.bytes() < 4096 + 1024);
  CHECK(errors(out).size() == 1);
  CHECK(framing.mid_message());
  framing.feed("yyy\n{\"ok\":1}\n", out);
  CHECK(messages(out) == Strings{"{\"ok\":1}"});
  CHECK_FALSE(framing.mid_message());
}

TEST_CASE("ndjson: many messages in one read come out in order", "[framing]") {
  NdjsonFraming framing;
  std::string stream;
  Strings expected;
  for (int i = 0; i < 1000; ++i) {
    std::string line = "{\"n\":" + std::to_string(i) + "}";
    stream += line + (i % 2 ? "\r\n" : "\n");
    expected.push_back("M:" + line);
  }
  CHECK(render(feed_all(framing, stream)) == expected);
}

TEST_CASE("ndjson: encode() appends one newline, and round-trips", "[framing]") {
  NdjsonFraming framing;
  CHECK(framing.encode("{}") == "{}\n");
  CHECK(framing.encode(R"({"s":"a\nb"})") == "{\"s\":\"a\\nb\"}\n");
  NdjsonFraming decoder;
  CHECK(render(feed_all(decoder, framing.encode("[1]") + framing.encode("[2]"))) == Strings{"M:[1]", "M:[2]"});
}

TEST_CASE("make_framing() builds the framing it is asked for, with its limit", "[framing]") {
  auto cl = make_framing(FramingKind::kContentLength, 3);
  auto nd = make_framing(FramingKind::kNdjson, 3);
  CHECK(cl->encode("{}") == "Content-Length: 2\r\n\r\n{}");
  CHECK(nd->encode("{}") == "{}\n");
  CHECK(errors(feed_all(*cl, frame("1234"))).size() == 1);
  CHECK(errors(feed_all(*nd, "1234\n")).size() == 1);
  CHECK(messages(feed_all(*nd, "123\n")) == Strings{"123"});
}

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
