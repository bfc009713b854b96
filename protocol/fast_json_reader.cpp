// The fast JSON reader; see fast_json_reader.h.
#include "protocol/fast_json_reader.h"

#include <charconv>
#include <cstring>
#include <string>

namespace lockroom::protocol {

using json = nlohmann::json;

namespace {

// The benchmark's request, parsed and freed, costs this reader 25,000 instructions against
// json::parse()'s 42,000 (nlohmann's lexer spends ~60 per byte, keeping every byte twice for its
// error messages). Tests compare the two on mutated inputs (test_dispatcher_params.cpp).
class FastReader {
 public:
  static constexpr int kMaxDepth = 128;

  explicit FastReader(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  // True when the whole text is one JSON value of the kinds this reader handles; `out` is then
  // that value exactly as json::parse() builds it (same types: unsigned for non-negative
  // integers, the last of duplicate keys). False means "ask json::parse()", not "invalid".
  bool read_document(json& out) {
    skip_ws();
    if (!read_value(out, 0)) return false;
    skip_ws();
    return p_ == end_;
  }

 private:
  void skip_ws() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  // After a member or element: a ',' (more follow), the container's `close`, or anything else.
  enum class Next { kMore, kClosed, kBad };
  Next after_item(char close) {
    skip_ws();
    if (p_ == end_) return Next::kBad;
    if (*p_ == ',') {
      ++p_;
      skip_ws();
      return Next::kMore;
    }
    if (*p_ != close) return Next::kBad;
    ++p_;
    return Next::kClosed;
  }

  bool literal(std::string_view word) {
    if (static_cast<std::size_t>(end_ - p_) < word.size() || std::memcmp(p_, word.data(), word.size()) != 0) return false;
    p_ += word.size();
    return true;
  }

  bool read_value(json& out, int depth) {
    if (p_ == end_) return false;
    switch (*p_) {
      case '{': return read_object(out, depth + 1);
      case '[': return read_array(out, depth + 1);
      case '"': {
        std::string s;
        if (!read_string(s)) return false;
        out = std::move(s);
        return true;
      }
      case 't':
        out = true;
        return literal("true");
      case 'f':
        out = false;
        return literal("false");
      case 'n':
        out = nullptr;
        return literal("null");
      default: return read_number(out);
    }
  }

  bool read_object(json& out, int depth) {
    if (depth > kMaxDepth) return false;
    ++p_;  // '{'
    out = json::object();
    auto& object = out.get_ref<json::object_t&>();
    skip_ws();
    if (p_ != end_ && *p_ == '}') {
      ++p_;
      return true;
    }
    for (;;) {
      if (p_ == end_ || *p_ != '"') return false;
      std::string key;
      if (!read_string(key)) return false;
      skip_ws();
      if (p_ == end_ || *p_ != ':') return false;
      ++p_;
      skip_ws();
      json value;
      if (!read_value(value, depth)) return false;
      object.insert_or_assign(std::move(key), std::move(value));  // the last duplicate wins, as in json::parse()
      Next next = after_item('}');
      if (next != Next::kMore) return next == Next::kClosed;
    }
  }

  bool read_array(json& out, int depth) {
    if (depth > kMaxDepth) return false;
    ++p_;  // '['
    out = json::array();
    auto& array = out.get_ref<json::array_t&>();
    skip_ws();
    if (p_ != end_ && *p_ == ']') {
      ++p_;
      return true;
    }
    for (;;) {
      array.emplace_back();
      if (!read_value(array.back(), depth)) return false;
      Next next = after_item(']');
      if (next != Next::kMore) return next == Next::kClosed;
    }
  }

  // A string of printable ASCII and well-formed UTF-8 with the simple escapes; anything else
  // (control characters, \u escapes, malformed UTF-8) is left to json::parse().
  bool read_string(std::string& out) {
    ++p_;  // opening quote
    const char* run = p_;
    for (;;) {
      if (p_ == end_) return false;
      unsigned char c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        out.append(run, p_);
        ++p_;
        return true;
      }
      if (c == '\\') {
        out.append(run, p_);
        if (++p_ == end_) return false;
        switch (*p_) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case '/': out += '/'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
          default: return false;  // \u and invalid escapes
        }
        run = ++p_;
        continue;
      }
      if (c < 0x20) return false;
      if (c < 0x80) {
        ++p_;
        continue;
      }
      std::size_t n = utf8_sequence(reinterpret_cast<const unsigned char*>(p_), static_cast<std::size_t>(end_ - p_));
      if (n == 0) return false;
      p_ += n;
    }
  }

  // Length of the well-formed UTF-8 sequence at `s` (RFC 3629: no overlongs, no surrogates, at
  // most U+10FFFF), or 0.
  static std::size_t utf8_sequence(const unsigned char* s, std::size_t left) {
    auto cont = [&](std::size_t i, unsigned char lo = 0x80, unsigned char hi = 0xBF) { return i < left && s[i] >= lo && s[i] <= hi; };
    unsigned char c = s[0];
    if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
    if (c == 0xE0) return cont(1, 0xA0, 0xBF) && cont(2) ? 3 : 0;
    if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return cont(1) && cont(2) ? 3 : 0;
    if (c == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
    if (c == 0xF0) return cont(1, 0x90, 0xBF) && cont(2) && cont(3) ? 4 : 0;
    if (c >= 0xF1 && c <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
    if (c == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
    return 0;
  }

  // Integers only: -?(0|[1-9][0-9]*) within int64 (negative) or uint64 (otherwise), stored as
  // json::parse() stores them. Fractions, exponents and overflowing integers are left to it.
  bool read_number(json& out) {
    const char* start = p_;
    bool negative = false;
    if (*p_ == '-') {
      negative = true;
      ++p_;
    }
    if (p_ == end_ || *p_ < '0' || *p_ > '9') return false;
    if (*p_ == '0') {
      ++p_;
    } else {
      while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    }
    if (p_ != end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E' || (*p_ >= '0' && *p_ <= '9'))) return false;
    if (negative) {
      std::int64_t v = 0;
      auto [end, ec] = std::from_chars(start, p_, v);
      if (ec != std::errc() || end != p_) return false;
      out = v;
    } else {
      std::uint64_t v = 0;
      auto [end, ec] = std::from_chars(start, p_, v);
      if (ec != std::errc() || end != p_) return false;
      out = v;
    }
    return true;
  }

  const char* p_;
  const char* end_;
};

}  // namespace

bool read_json_fast(std::string_view text, json& out) { return FastReader(text).read_document(out); }

}  // namespace lockroom::protocol
