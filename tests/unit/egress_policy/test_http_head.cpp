// HTTP heads through http-parser: absolute-form and CONNECT requests split at every byte
// boundary, the bounds, the errors a confused client gets, body framing followed to the end of
// each message, and the head serialised for upstream without hop-by-hop or Proxy-* headers.
#include <catch2/catch.hpp>

#include <string>

#include "server/egress/policy/http_head.h"

using namespace lockroom::egress;

namespace {

// Feeds `text` in two parts split at `split`; returns the parser and the number of bytes used.
struct Parsed {
  RequestHeadParser parser;
  ParseState state = ParseState::kNeedMore;
  std::size_t used = 0;
};

Parsed feed_split(const std::string& text, std::size_t split) {
  Parsed p;
  for (std::string_view part : {std::string_view(text).substr(0, split), std::string_view(text).substr(split)}) {
    if (p.state != ParseState::kNeedMore) break;
    FeedResult r = p.parser.feed(part);
    p.state = r.state;
    p.used += r.consumed;
  }
  return p;
}

RequestHead parse_request(const std::string& text) {
  Parsed p = feed_split(text, text.size());
  INFO(text << (p.state == ParseState::kError ? p.parser.error().message : ""));
  REQUIRE(p.state == ParseState::kComplete);
  return p.parser.head();
}

std::string request_error(const std::string& text) {
  RequestHeadParser parser;
  FeedResult r = parser.feed(text);
  INFO(text);
  REQUIRE(r.state == ParseState::kError);
  return parser.error().message;
}

}  // namespace

TEST_CASE("an absolute-form request split at every byte boundary gives the same head and leaves the body") {
  const std::string head_text =
      "POST http://API.Example.com:8080/v1/items?q=1&r=two#frag HTTP/1.1\r\n"
      "Host: api.example.com:8080\r\n"
      "User-Agent: curl/7.88.1\r\n"
      "X-Mixed-Case:  padded value  \r\n"
      "Content-Length: 5\r\n"
      "\r\n";
  const std::string text = head_text + "hello";
  for (std::size_t split = 0; split <= text.size(); ++split) {
    Parsed p = feed_split(text, split);
    INFO("split at " << split);
    REQUIRE(p.state == ParseState::kComplete);
    CHECK(p.used == head_text.size());
    const RequestHead& head = p.parser.head();
    CHECK(head.method == "POST");
    CHECK_FALSE(head.is_connect);
    CHECK(head.scheme == Scheme::kHttp);
    CHECK(head.host.name == "api.example.com");
    CHECK(head.port == 8080);
    CHECK(head.target == "/v1/items?q=1&r=two");
    REQUIRE(head.headers.size() == 4);
    CHECK(head.headers[2] == HttpHeader{"X-Mixed-Case", "padded value"});
    CHECK(head.body == BodyFraming::kContentLength);
    CHECK(head.content_length == 5);
    CHECK(head.keep_alive);
  }
  // Byte by byte as well.
  RequestHeadParser parser;
  std::size_t used = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    FeedResult r = parser.feed(std::string_view(text).substr(i, 1));
    used += r.consumed;
    if (r.state == ParseState::kComplete) break;
    REQUIRE(r.state == ParseState::kNeedMore);
  }
  CHECK(used == head_text.size());
  CHECK(parser.head().target == "/v1/items?q=1&r=two");
}

TEST_CASE("CONNECT host:port is a tunnel, the bytes after the head are the client's") {
  const std::string head_text = "CONNECT github.com:443 HTTP/1.1\r\nHost: github.com:443\r\nProxy-Connection: keep-alive\r\n\r\n";
  const std::string text = head_text + "\x16\x03\x01\x02\x00";
  for (std::size_t split = 0; split <= text.size(); ++split) {
    Parsed p = feed_split(text, split);
    INFO("split at " << split);
    REQUIRE(p.state == ParseState::kComplete);
    CHECK(p.used == head_text.size());
    CHECK(p.parser.head().is_connect);
    CHECK(p.parser.head().host.name == "github.com");
    CHECK(p.parser.head().port == 443);
    CHECK(p.parser.head().body == BodyFraming::kNone);
    CHECK(p.parser.head().target.empty());
  }
  RequestHead v6 = parse_request("CONNECT [::1]:8443 HTTP/1.1\r\n\r\n");
  CHECK(v6.host.name == "::1");
  CHECK(v6.host.is_address());
  RequestHead odd = parse_request("CONNECT 0x7f.1:22 HTTP/1.1\r\n\r\n");
  CHECK(odd.host.name == "127.0.0.1");
}

TEST_CASE("requests a forward proxy cannot serve are errors that say why") {
  CHECK_THAT(request_error("GET /index.html HTTP/1.1\r\nHost: example.com\r\n\r\n"),
             Catch::Contains("request target \"/index.html\" is not absolute: use the proxy as a forward proxy"));
  CHECK_THAT(request_error("CONNECT github.com HTTP/1.1\r\n\r\n"), Catch::Contains("CONNECT target \"github.com\" must be host:port"));
  CHECK_THAT(request_error("CONNECT github.com:0 HTTP/1.1\r\n\r\n"), Catch::Contains("port 0"));
  CHECK_THAT(request_error("GET ftp://example.com/ HTTP/1.1\r\n\r\n"), Catch::Contains("scheme \"ftp\" is not supported"));
  CHECK_THAT(request_error("GET http://user:pw@example.com/ HTTP/1.1\r\n\r\n"), Catch::Contains("credentials in the URL"));
  CHECK_THAT(request_error("GET http://exa_mple..com/ HTTP/1.1\r\n\r\n"), Catch::Contains("empty label"));
  CHECK_THAT(request_error("GET http://1.2.3.999/ HTTP/1.1\r\n\r\n"), Catch::Contains("IPv4"));
  CHECK_THAT(request_error("GET http://example.com/ HTTP/2.0\r\n\r\n"), Catch::Contains("not supported"));
  CHECK_THAT(request_error("NOT A REQUEST\r\n\r\n"), Catch::StartsWith("malformed HTTP request"));
  CHECK_THAT(request_error("GET http://example.com/ HTTP/1.1\r\nBad Header: x\r\n\r\n"), Catch::Contains("header name \"Bad Header\" is not a valid token"));
  CHECK_THAT(request_error("POST http://example.com/ HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n"), Catch::Contains("is not a valid token"));
  // Both framings at once is a smuggling attempt.
  CHECK_THAT(request_error("POST http://example.com/ HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"),
             Catch::StartsWith("malformed HTTP request"));
  CHECK_THAT(request_error("POST http://example.com/ HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n"),
             Catch::StartsWith("malformed HTTP request"));
  // After an error the parser stays failed.
  RequestHeadParser parser;
  CHECK(parser.feed("GET / HTTP/1.1\r\n\r\n").state == ParseState::kError);
  CHECK(parser.feed("GET http://a.example/ HTTP/1.1\r\n\r\n").state == ParseState::kError);
}

TEST_CASE("heads are bounded in size and in header lines") {
  std::string big = "GET http://example.com/ HTTP/1.1\r\nX-Big: " + std::string(70 * 1024, 'a') + "\r\n\r\n";
  RequestHeadParser parser;
  FeedResult r{};
  for (std::size_t i = 0; i < big.size() && r.state == ParseState::kNeedMore; i += 1000) {
    r = parser.feed(std::string_view(big).substr(i, 1000));
  }
  REQUIRE(r.state == ParseState::kError);
  CHECK_THAT(parser.error().message, Catch::Contains("larger than 64 KiB"));

  std::string just_fits = "GET http://example.com/ HTTP/1.1\r\nX-Big: ";
  just_fits += std::string(kMaxHeadBytes - just_fits.size() - 4, 'a') + "\r\n\r\n";
  REQUIRE(just_fits.size() == kMaxHeadBytes);
  CHECK(parse_request(just_fits).headers.size() == 1);

  auto with_headers = [](std::size_t count) {
    std::string text = "GET http://example.com/ HTTP/1.1\r\n";
    for (std::size_t i = 0; i < count; ++i) text += "X-H" + std::to_string(i) + ": v\r\n";
    return text + "\r\n";
  };
  CHECK(parse_request(with_headers(100)).headers.size() == 100);
  CHECK_THAT(request_error(with_headers(101)), Catch::Contains("more than 100 header lines"));
}

TEST_CASE("content-length and chunked bodies are followed to the end of the message, at any split") {
  const std::string head_text = "POST http://example.com/upload HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string body = "5\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n";
  const std::string next = "GET http://example.com/next HTTP/1.1\r\n\r\n";
  const std::string text = head_text + body + next;
  for (std::size_t split = head_text.size(); split <= head_text.size() + body.size(); ++split) {
    RequestHeadParser parser;
    FeedResult head = parser.feed(text);
    REQUIRE(head.state == ParseState::kComplete);
    REQUIRE(head.consumed == head_text.size());
    CHECK(parser.head().body == BodyFraming::kChunked);
    std::string decoded;
    auto collect = [&](std::string_view part) { decoded += part; };
    std::size_t used = 0;
    FeedResult r = parser.feed_body(std::string_view(text).substr(head_text.size(), split - head_text.size()), collect);
    used += r.consumed;
    if (r.state == ParseState::kNeedMore) {
      r = parser.feed_body(std::string_view(text).substr(split), collect);
      used += r.consumed;
    }
    INFO("split at " << split);
    REQUIRE(r.state == ParseState::kComplete);
    CHECK(used == body.size());
    CHECK(decoded == "hello world");
  }

  RequestHeadParser fixed;
  std::string with_length = "PUT http://example.com/x HTTP/1.1\r\nContent-Length: 4\r\n\r\nabcdGET";
  FeedResult head = fixed.feed(with_length);
  REQUIRE(head.state == ParseState::kComplete);
  CHECK(fixed.head().body == BodyFraming::kContentLength);
  std::string got;
  FeedResult body_result = fixed.feed_body(std::string_view(with_length).substr(head.consumed), [&](std::string_view p) { got += p; });
  CHECK(body_result.state == ParseState::kComplete);
  CHECK(body_result.consumed == 4);
  CHECK(got == "abcd");

  RequestHeadParser none;
  head = none.feed("GET http://example.com/ HTTP/1.1\r\n\r\n");
  CHECK(none.head().body == BodyFraming::kNone);
  CHECK(none.feed_body("", nullptr).state == ParseState::kComplete);
}

TEST_CASE("keep-alive follows the version and Connection header") {
  CHECK(parse_request("GET http://a.example/ HTTP/1.1\r\n\r\n").keep_alive);
  CHECK_FALSE(parse_request("GET http://a.example/ HTTP/1.1\r\nConnection: close\r\n\r\n").keep_alive);
  CHECK_FALSE(parse_request("GET http://a.example/ HTTP/1.0\r\n\r\n").keep_alive);
  CHECK(parse_request("GET http://a.example/ HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").keep_alive);
}

TEST_CASE("the upstream head: origin-form, Host from the target, hop-by-hop and Proxy-* removed") {
  RequestHead head = parse_request(
      "POST http://example.com:8080/p?q=1 HTTP/1.1\r\n"
      "Accept: */*\r\n"
      "Host: evil.example\r\n"
      "Proxy-Authorization: Basic Zm9vOmJhcg==\r\n"
      "Proxy-Connection: keep-alive\r\n"
      "Connection: X-Drop-Me, Content-Length, close\r\n"
      "X-Drop-Me: 1\r\n"
      "Keep-Alive: timeout=5\r\n"
      "TE: trailers\r\n"
      "Trailer: X-T\r\n"
      "Upgrade: websocket\r\n"
      "Host: second.example\r\n"
      "Content-Length: 2\r\n"
      "X-Keep: yes\r\n"
      "\r\n");
  CHECK(serialize_request_for_upstream(head) ==
        "POST /p?q=1 HTTP/1.1\r\n"
        "Host: example.com:8080\r\n"
        "Accept: */*\r\n"
        "Content-Length: 2\r\n"
        "X-Keep: yes\r\n"
        "Connection: close\r\n"
        "\r\n");

  RequestHead plain = parse_request("GET http://[::1]/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
  CHECK(serialize_request_for_upstream(plain) == "GET / HTTP/1.1\r\nHost: [::1]\r\nTransfer-Encoding: chunked\r\n\r\n");
  RequestHead https = parse_request("GET https://example.com HTTP/1.1\r\n\r\n");
  CHECK(https.scheme == Scheme::kHttps);
  CHECK(https.port == 443);
  CHECK(serialize_request_for_upstream(https) == "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n");
}

TEST_CASE("response heads: status, framing by status, method and headers, and the relayed head") {
  auto parse_response = [](const std::string& text, std::string_view method = "GET") {
    ResponseHeadParser parser(method);
    FeedResult r = parser.feed(text);
    INFO(text << (r.state == ParseState::kError ? parser.error().message : ""));
    REQUIRE(r.state == ParseState::kComplete);
    return parser.head();
  };
  ResponseHead ok = parse_response("HTTP/1.1 200 OK\r\nContent-Length: 12\r\nConnection: keep-alive\r\n\r\n");
  CHECK(ok.status == 200);
  CHECK(ok.reason == "OK");
  CHECK(ok.body == BodyFraming::kContentLength);
  CHECK(ok.content_length == 12);
  CHECK(ok.keep_alive);
  CHECK(serialize_response_for_client(ok) == "HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n");

  CHECK(parse_response("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n").body == BodyFraming::kChunked);
  ResponseHead until_close = parse_response("HTTP/1.1 200 OK\r\n\r\n");
  CHECK(until_close.body == BodyFraming::kUntilClose);
  CHECK_FALSE(until_close.keep_alive);
  CHECK_THAT(serialize_response_for_client(until_close), Catch::EndsWith("Connection: close\r\n\r\n"));
  CHECK(parse_response("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").body == BodyFraming::kNone);
  CHECK(parse_response("HTTP/1.1 204 No Content\r\n\r\n").body == BodyFraming::kNone);
  CHECK(parse_response("HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n").body == BodyFraming::kNone);
  CHECK(parse_response("HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n", "HEAD").body == BodyFraming::kNone);
  CHECK(parse_response("HTTP/1.1 200 Connection established\r\n\r\n", "CONNECT").body == BodyFraming::kNone);
  ResponseHead interim = parse_response("HTTP/1.1 100 Continue\r\n\r\n");
  CHECK(interim.interim());
  CHECK(interim.body == BodyFraming::kNone);

  // A HEAD response's Content-Length does not make the parser wait for a body.
  ResponseHeadParser head_parser("HEAD");
  std::string head_response = "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n";
  REQUIRE(head_parser.feed(head_response).state == ParseState::kComplete);
  CHECK(head_parser.feed_body("", nullptr).state == ParseState::kComplete);

  // Until-close bodies end when the server closes.
  ResponseHeadParser close_parser;
  std::string text = "HTTP/1.0 200 OK\r\n\r\npart one, part two";
  FeedResult r = close_parser.feed(text);
  REQUIRE(r.state == ParseState::kComplete);
  std::string got;
  auto collect = [&](std::string_view p) { got += p; };
  CHECK(close_parser.feed_body(std::string_view(text).substr(r.consumed), collect).state == ParseState::kNeedMore);
  CHECK(close_parser.finish_body(collect).state == ParseState::kComplete);
  CHECK(got == "part one, part two");

  // A content-length body cut short by the close is an error.
  ResponseHeadParser short_parser;
  text = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
  r = short_parser.feed(text);
  CHECK(short_parser.feed_body(std::string_view(text).substr(r.consumed), collect).state == ParseState::kNeedMore);
  CHECK(short_parser.finish_body(collect).state == ParseState::kError);
  CHECK_THAT(short_parser.error().message, Catch::Contains("closed before the end"));

  ResponseHeadParser bad;
  CHECK(bad.feed("HTTP/1.1 abc\r\n\r\n").state == ParseState::kError);
  CHECK_THAT(bad.error().message, Catch::StartsWith("malformed HTTP response"));
}

TEST_CASE("inside a terminated tunnel requests are origin-form, to the tunnel's host") {
  Host host = *parse_host("api.example.com");
  auto parse_inside = [&](const std::string& text) {
    RequestHeadParser parser = RequestHeadParser::inside_tunnel(host, 443);
    FeedResult r = parser.feed(text);
    return std::make_pair(r.state, r.state == ParseState::kComplete ? parser.head() : RequestHead{});
  };
  auto [state, head] = parse_inside("GET /v1/x?y=1 HTTP/1.1\r\nHost: evil.example\r\n\r\n");
  REQUIRE(state == ParseState::kComplete);
  CHECK(head.scheme == Scheme::kHttps);
  CHECK(head.host == host);
  CHECK(head.port == 443);
  CHECK(head.target == "/v1/x?y=1");
  CHECK(serialize_request_for_upstream(head) == "GET /v1/x?y=1 HTTP/1.1\r\nHost: api.example.com\r\n\r\n");
  CHECK(parse_inside("GET https://api.example.com/z HTTP/1.1\r\n\r\n").second.target == "/z");

  RequestHeadParser other = RequestHeadParser::inside_tunnel(host, 443);
  REQUIRE(other.feed("GET https://evil.example/ HTTP/1.1\r\n\r\n").state == ParseState::kError);
  CHECK_THAT(other.error().message, Catch::Contains("names another host than the tunnel's (api.example.com:443)"));
  RequestHeadParser connect = RequestHeadParser::inside_tunnel(host, 443);
  REQUIRE(connect.feed("CONNECT a.example:443 HTTP/1.1\r\n\r\n").state == ParseState::kError);
  CHECK_THAT(connect.error().message, Catch::Contains("CONNECT inside a TLS tunnel"));
}
