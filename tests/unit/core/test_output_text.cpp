// OutputTextEncoder: UTF-8 stays text across any chunking; anything else becomes base64.
#include <catch2/catch.hpp>

#include "server/core/output_text.h"

using namespace lockroom::core;

namespace {
// Decodes the encoder's chunks back into bytes (base64 decoded by hand for independence).
std::string decode_base64(const std::string& in) {
  static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  int buffer = 0, bits = 0;
  for (char c : in) {
    if (c == '=') break;
    buffer = (buffer << 6) | static_cast<int>(alphabet.find(c));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  return out;
}
std::string bytes_of(const OutputChunk& c) { return c.base64 ? decode_base64(c.data) : c.data; }
}  // namespace

TEST_CASE("output: ASCII and multi-byte UTF-8 are text", "[core][output]") {
  OutputTextEncoder enc;
  auto c = enc.encode("héllo → 世界 🎉\n");
  CHECK_FALSE(c.base64);
  CHECK(c.data == "héllo → 世界 🎉\n");
  CHECK(enc.flush().empty());
}

TEST_CASE("output: a character split at every position stays text", "[core][output]") {
  const std::string text = "a→b🎉c世";
  for (std::size_t cut = 0; cut <= text.size(); ++cut) {
    OutputTextEncoder enc;
    auto first = enc.encode(std::string_view(text).substr(0, cut));
    auto second = enc.encode(std::string_view(text).substr(cut));
    INFO("cut at " << cut);
    CHECK_FALSE(first.base64);
    CHECK_FALSE(second.base64);
    CHECK(first.data + second.data == text);
    CHECK(enc.flush().empty());
  }
}

TEST_CASE("output: one byte at a time reassembles into text", "[core][output]") {
  const std::string text = "ü🎉→";
  OutputTextEncoder enc;
  std::string got;
  for (char ch : text) {
    auto c = enc.encode(std::string_view(&ch, 1));
    CHECK_FALSE(c.base64);
    got += c.data;
  }
  CHECK(got == text);
}

TEST_CASE("output: invalid UTF-8 goes out as base64 and round-trips", "[core][output]") {
  const std::string cases[] = {std::string("\xff\xfe binary", 9), std::string("ok\xc0\xaf", 4) /* overlong '/' */,
                               std::string("\xed\xa0\x80", 3) /* surrogate */, std::string("\xf4\x90\x80\x80", 4) /* > U+10FFFF */,
                               std::string("\0\x01\x80", 3)};
  for (const auto& bytes : cases) {
    OutputTextEncoder enc;
    auto c = enc.encode(bytes);
    INFO(c.data);
    CHECK(c.base64);
    CHECK(bytes_of(c) == bytes);
  }
}

TEST_CASE("output: a dangling partial character at the end is flushed as base64", "[core][output]") {
  OutputTextEncoder enc;
  auto c = enc.encode("ok\xe2\x86");
  CHECK(c.data == "ok");
  auto tail = enc.flush();
  CHECK(tail.base64);
  CHECK(bytes_of(tail) == "\xe2\x86");
}

TEST_CASE("output: a held partial character followed by garbage is sent whole as base64", "[core][output]") {
  OutputTextEncoder enc;
  CHECK(enc.encode("\xe2").empty());
  auto c = enc.encode("\x41");
  CHECK(c.base64);
  CHECK(bytes_of(c) == "\xe2\x41");
}

TEST_CASE("output: scan_utf8 reports the valid prefix", "[core][output]") {
  CHECK(scan_utf8("abc").valid_prefix == 3);
  auto s = scan_utf8("ab\xe4\xb8");
  CHECK(s.valid_prefix == 2);
  CHECK(s.incomplete_tail);
  auto bad = scan_utf8("ab\x80zz");
  CHECK(bad.valid_prefix == 2);
  CHECK_FALSE(bad.incomplete_tail);
}

TEST_CASE("output: base64 matches the RFC 4648 test vectors", "[core][output]") {
  CHECK(base64_encode("") == "");
  CHECK(base64_encode("f") == "Zg==");
  CHECK(base64_encode("fo") == "Zm8=");
  CHECK(base64_encode("foo") == "Zm9v");
  CHECK(base64_encode("foobar") == "Zm9vYmFy");
}
