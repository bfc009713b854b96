// HTTP/1.x message heads as a guest's client sends them to the forward proxy, and as upstream
// servers answer, parsed with http-parser (never by hand).
//
// RequestHeadParser reads what a client sends a forward proxy: an absolute-form request
// (`GET http://host:port/path HTTP/1.1`, also `https://`) or `CONNECT host:port`. An origin-form
// request (`GET /path`) is an error that tells the user to use lockroom as a forward proxy.
// Inside a tunnel whose TLS the proxy terminates, RequestHeadParser::inside_tunnel() reads the
// origin-form requests the client sends there.
// ResponseHeadParser reads an upstream response head, for its status and body framing.
//
// Both are incremental: feed() takes bytes as they arrive and says when the head is complete and
// how many of the fed bytes it used; the bytes after that are body (or, after CONNECT, tunnel)
// data that belong to the caller. After the head, the same parser can follow the body to its end
// with feed_body(), which hands out the decoded body bytes (chunked framing removed) and says
// where the message ends, so a keep-alive connection can be relayed message by message.
//
// Bounded: a head is at most 64 KiB and 100 header lines; header names must be tokens (stricter
// than http-parser, which lets `Transfer-Encoding : chunked` through). Errors say what was wrong.
// Headers keep their order and the case of their names. Not thread-safe; one parser per message.
// Serialising heads for the other side (http_forward.cpp) is at the end of this header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/common/result.h"
#include "server/egress/policy/host_name.h"
#include "server/egress/policy/rules.h"

namespace lockroom::egress {

constexpr std::size_t kMaxHeadBytes = 64 * 1024;
constexpr std::size_t kMaxHeaderCount = 100;

struct HttpHeader {
  std::string name;  // as sent
  std::string value;
  friend bool operator==(const HttpHeader&, const HttpHeader&) = default;
};
using HttpHeaders = std::vector<HttpHeader>;

// The value of the first header called `name` (compared case-insensitively).
const std::string* find_header(const HttpHeaders& headers, std::string_view name);
bool header_name_equals(std::string_view a, std::string_view b);

enum class BodyFraming {
  kNone,           // no body follows the head
  kContentLength,  // exactly content_length bytes
  kChunked,        // chunked transfer coding up to the last chunk and trailers
  kUntilClose,     // (responses only) everything until the server closes
};
const char* body_framing_name(BodyFraming framing);

struct RequestHead {
  std::string method;  // "GET", "CONNECT", ...
  bool is_connect = false;
  Scheme scheme = Scheme::kHttp;  // http or https from an absolute-form URL; kTcp for CONNECT until the caller knows
  Host host;                      // normalised (parse_host)
  std::uint16_t port = 0;
  std::string target;             // origin-form "/path?query" for upstream; empty for CONNECT
  int http_major = 1;
  int http_minor = 1;
  HttpHeaders headers;            // ordered, names as sent
  BodyFraming body = BodyFraming::kNone;
  std::uint64_t content_length = 0;  // for kContentLength
  bool keep_alive = true;
};

struct ResponseHead {
  int status = 0;
  std::string reason;
  int http_major = 1;
  int http_minor = 1;
  HttpHeaders headers;
  BodyFraming body = BodyFraming::kNone;
  std::uint64_t content_length = 0;
  bool keep_alive = true;
  // 1xx other than 101: another head follows on the same connection for the same request.
  bool interim() const { return status >= 100 && status < 200 && status != 101; }
};

enum class ParseState { kNeedMore, kComplete, kError };

struct FeedResult {
  ParseState state = ParseState::kNeedMore;
  std::size_t consumed = 0;  // bytes of this input that were used (all of them unless complete)
};

class HttpMessageParser;  // the http-parser state shared by both head parsers

class RequestHeadParser {
 public:
  // A forward-proxy request: absolute-form or CONNECT.
  RequestHeadParser();
  // A request inside a tunnel whose TLS the proxy terminated: origin-form (`GET /path`), to the
  // tunnel's host and port over https. An absolute-form request to another host is an error.
  static RequestHeadParser inside_tunnel(Host host, std::uint16_t port);
  ~RequestHeadParser();
  RequestHeadParser(RequestHeadParser&&) noexcept;
  RequestHeadParser& operator=(RequestHeadParser&&) noexcept;

  FeedResult feed(std::string_view data);
  const RequestHead& head() const { return head_; }  // valid once feed() said kComplete
  const Error& error() const;                         // valid once feed() said kError

  // After the head: follow the body to its end. `on_body` gets the body bytes without chunk
  // framing. kComplete means the message ended within `data` after `consumed` bytes.
  FeedResult feed_body(std::string_view data, const std::function<void(std::string_view)>& on_body);

 private:
  std::unique_ptr<HttpMessageParser> parser_;
  RequestHead head_;
  std::optional<Host> tunnel_host_;
  std::uint16_t tunnel_port_ = 0;
};

class ResponseHeadParser {
 public:
  // The request's method decides whether a body can follow (HEAD: never; CONNECT 2xx: tunnel).
  explicit ResponseHeadParser(std::string_view request_method = "GET");
  ~ResponseHeadParser();
  ResponseHeadParser(ResponseHeadParser&&) noexcept;
  ResponseHeadParser& operator=(ResponseHeadParser&&) noexcept;

  FeedResult feed(std::string_view data);
  const ResponseHead& head() const { return head_; }
  const Error& error() const;

  FeedResult feed_body(std::string_view data, const std::function<void(std::string_view)>& on_body);
  // The server closed the connection: for kUntilClose this completes the message.
  FeedResult finish_body(const std::function<void(std::string_view)>& on_body);

 private:
  std::unique_ptr<HttpMessageParser> parser_;
  ResponseHead head_;
  bool head_request_ = false;
  bool connect_request_ = false;
};

// The head to send upstream for a non-CONNECT request: origin-form target, a Host header (first)
// with the target's authority (replacing any the client sent, so the request reaches
// the host the policy decided on), hop-by-hop headers (Connection and the headers it lists,
// Keep-Alive, TE, Trailer, Upgrade) and every Proxy-* header removed, `Connection: close` added
// when the client does not keep the connection alive. Content-Length and Transfer-Encoding are
// kept: the body is relayed as it came.
std::string serialize_request_for_upstream(const RequestHead& head);
// The authority for Host: "example.com", "example.com:8080", "[::1]:8080".
std::string host_header_value(const RequestHead& head);
// A response head as received, for relaying to the client (hop-by-hop headers removed as above).
std::string serialize_response_for_client(const ResponseHead& head);

}  // namespace lockroom::egress
