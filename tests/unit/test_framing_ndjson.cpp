// ndjson framing (server/rpc/framing.h): lines under every chunking, over-long lines, encode(),
// and make_framing().
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "server/rpc/framing.h"
#include "tests/unit/alloc_counter.h"
#include "tests/unit/framing_util.h"

using lockroom::rpc::FrameEvent;
using lockroom::rpc::FramingKind;
using lockroom::rpc::make_framing;
using lockroom::rpc::NdjsonFraming;
using namespace lockroom::testing;
using Strings = std::vector<std::string>;

namespace {
const std::string kBody1 = R"({"jsonrpc":"2.0","id":1,"method":"lockroom/echo","params":{"text":"h\u00e9"}})";
const std::string kBody2 = R"({"jsonrpc":"2.0","method":"initialized","params":{}})";
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
}  // namespace

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
