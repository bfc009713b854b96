// HTTP head parsing with http-parser, and serialising heads for the other side; see http_head.h.
#include "server/egress/policy/http_head.h"

#include <http_parser.h>

#include <climits>

namespace lockroom::egress {

namespace {

std::string printable(std::string_view text, std::size_t limit = 80) {
  std::string out;
  for (char c : text.substr(0, limit)) {
    unsigned char u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u >= 0x7f) ? '?' : c;
  }
  if (text.size() > limit) out += "...";
  return out;
}

// RFC 9110 token characters; http-parser is lenient about header names, lockroom is not.
bool is_token(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

bool header_name_equals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

const std::string* find_header(const HttpHeaders& headers, std::string_view name) {
  for (const HttpHeader& header : headers) {
    if (header_name_equals(header.name, name)) return &header.value;
  }
  return nullptr;
}

const char* body_framing_name(BodyFraming framing) {
  switch (framing) {
    case BodyFraming::kNone: return "none";
    case BodyFraming::kContentLength: return "content-length";
    case BodyFraming::kChunked: return "chunked";
    case BodyFraming::kUntilClose: return "until-close";
  }
  return "unknown";
}

// The http-parser state and the callbacks that collect a head, then follow its body.
class HttpMessageParser {
 public:
  // `headers_complete_result` is what on_headers_complete tells http-parser: 0, 1 (no body) or
  // 2 (no body, the rest is another protocol); responses set it from the status and method.
  HttpMessageParser(http_parser_type type, std::function<int(const http_parser&)> headers_complete_result)
      : headers_complete_result_(std::move(headers_complete_result)), what_(type == HTTP_REQUEST ? "request" : "response") {
    http_parser_init(&parser_, type);
    parser_.data = this;
    http_parser_settings_init(&settings_);
    settings_.on_url = &HttpMessageParser::on_url;
    settings_.on_status = &HttpMessageParser::on_status;
    settings_.on_header_field = &HttpMessageParser::on_header_field;
    settings_.on_header_value = &HttpMessageParser::on_header_value;
    settings_.on_headers_complete = &HttpMessageParser::on_headers_complete;
    settings_.on_body = &HttpMessageParser::on_body;
    settings_.on_message_complete = &HttpMessageParser::on_message_complete;
  }

  FeedResult feed_head(std::string_view data) {
    if (failed_) return {ParseState::kError, 0};
    if (head_done_) return {ParseState::kComplete, 0};
    if (data.empty()) return {ParseState::kNeedMore, 0};  // zero bytes would mean end of input to http-parser
    std::size_t allowed = kMaxHeadBytes - head_bytes_;
    std::string_view chunk = data.substr(0, allowed);
    std::size_t parsed = http_parser_execute(&parser_, &settings_, chunk.data(), chunk.size());
    if (head_done_) {
      // Paused in on_headers_complete, just before the head's final '\n'; it is part of the head.
      http_parser_pause(&parser_, 0);
      pending_lf_ = true;
      head_bytes_ += parsed + 1;
      return {ParseState::kComplete, parsed + 1};
    }
    if (HTTP_PARSER_ERRNO(&parser_) != HPE_OK) return fail_from_parser();
    head_bytes_ += parsed;
    if (head_bytes_ >= kMaxHeadBytes) {
      return fail(std::string("the ") + what_ + " head is larger than " + std::to_string(kMaxHeadBytes / 1024) + " KiB");
    }
    return {ParseState::kNeedMore, data.size()};
  }

  FeedResult feed_body(std::string_view data, const std::function<void(std::string_view)>& on_body) {
    if (failed_) return {ParseState::kError, 0};
    if (!head_done_) return fail("feed_body() was called before the head was complete");
    if (message_done_) return {ParseState::kComplete, 0};
    on_body_ = &on_body;
    if (pending_lf_) {
      pending_lf_ = false;
      http_parser_execute(&parser_, &settings_, "\n", 1);
      if (!message_done_ && HTTP_PARSER_ERRNO(&parser_) != HPE_OK) return fail_from_parser();
    }
    std::size_t parsed = 0;
    if (!message_done_ && !data.empty()) parsed = http_parser_execute(&parser_, &settings_, data.data(), data.size());
    on_body_ = nullptr;
    if (message_done_) return {ParseState::kComplete, parsed};
    if (HTTP_PARSER_ERRNO(&parser_) != HPE_OK) return fail_from_parser();
    return {ParseState::kNeedMore, data.size()};
  }

  FeedResult finish(const std::function<void(std::string_view)>& on_body) {
    FeedResult pending = feed_body({}, on_body);
    if (pending.state != ParseState::kNeedMore) return pending;
    on_body_ = &on_body;
    http_parser_execute(&parser_, &settings_, nullptr, 0);  // end of input
    on_body_ = nullptr;
    if (message_done_) return {ParseState::kComplete, 0};
    return fail(std::string("the connection closed before the end of the ") + what_ + " body");
  }

  FeedResult fail(std::string message) {
    failed_ = true;
    error_ = make_error(ErrorCode::kInvalidInput, std::move(message));
    return {ParseState::kError, 0};
  }

  FeedResult fail_from_parser() {
    if (callback_error_) return fail(*callback_error_);
    auto code = static_cast<http_errno>(HTTP_PARSER_ERRNO(&parser_));
    return fail(std::string("malformed HTTP ") + what_ + ": " + http_errno_description(code) + " (" +
                http_errno_name(code) + ")");
  }

  const http_parser& parser() const { return parser_; }
  const Error& error() const { return error_; }
  std::string url_;
  std::string status_;
  HttpHeaders headers_;

 private:
  static HttpMessageParser& self(http_parser* p) { return *static_cast<HttpMessageParser*>(p->data); }

  static int on_url(http_parser* p, const char* at, std::size_t length) {
    self(p).url_.append(at, length);
    return 0;
  }
  static int on_status(http_parser* p, const char* at, std::size_t length) {
    self(p).status_.append(at, length);
    return 0;
  }
  static int on_header_field(http_parser* p, const char* at, std::size_t length) {
    HttpMessageParser& s = self(p);
    if (s.headers_.empty() || s.last_was_value_) {
      if (s.headers_.size() >= kMaxHeaderCount) {
        s.callback_error_ = std::string("the ") + s.what_ + " has more than " + std::to_string(kMaxHeaderCount) + " header lines";
        return 1;
      }
      s.headers_.emplace_back();
      s.last_was_value_ = false;
    }
    s.headers_.back().name.append(at, length);
    return 0;
  }
  static int on_header_value(http_parser* p, const char* at, std::size_t length) {
    HttpMessageParser& s = self(p);
    s.last_was_value_ = true;
    s.headers_.back().value.append(at, length);
    return 0;
  }
  static int on_headers_complete(http_parser* p) {
    HttpMessageParser& s = self(p);
    for (HttpHeader& header : s.headers_) {
      if (!is_token(header.name)) {
        s.callback_error_ = "header name \"" + printable(header.name) + "\" is not a valid token";
        return -1;
      }
      while (!header.value.empty() && (header.value.back() == ' ' || header.value.back() == '\t')) header.value.pop_back();
      for (char c : header.value) {
        if (c == '\r' || c == '\n' || c == '\0') {
          s.callback_error_ = "header \"" + printable(header.name) + "\" has a line break or NUL in its value";
          return -1;
        }
      }
    }
    s.head_done_ = true;
    http_parser_pause(p, 1);
    return s.headers_complete_result_ ? s.headers_complete_result_(*p) : 0;
  }
  static int on_body(http_parser* p, const char* at, std::size_t length) {
    HttpMessageParser& s = self(p);
    if (s.on_body_ && *s.on_body_) (*s.on_body_)(std::string_view(at, length));
    return 0;
  }
  static int on_message_complete(http_parser* p) {
    self(p).message_done_ = true;
    http_parser_pause(p, 1);
    return 0;
  }

  http_parser parser_{};
  http_parser_settings settings_{};
  std::function<int(const http_parser&)> headers_complete_result_;
  const char* what_;
  std::size_t head_bytes_ = 0;
  bool last_was_value_ = false;
  bool head_done_ = false;
  bool message_done_ = false;
  bool pending_lf_ = false;
  bool failed_ = false;
  std::optional<std::string> callback_error_;
  const std::function<void(std::string_view)>* on_body_ = nullptr;
  Error error_;
};

namespace {

// Framing of a message body from what http-parser saw in the head.
BodyFraming framing_from(const http_parser& p, std::uint64_t* content_length) {
  if (p.flags & F_CHUNKED) return BodyFraming::kChunked;
  if ((p.flags & F_CONTENTLENGTH) && p.content_length != ULLONG_MAX && p.content_length > 0) {
    *content_length = p.content_length;
    return BodyFraming::kContentLength;
  }
  return BodyFraming::kNone;
}

// Inside a terminated tunnel: origin-form, or absolute-form naming the tunnel's own host.
Result<void> fill_tunnel_target(RequestHead& head, const std::string& url, const Host& host, std::uint16_t port) {
  if (head.is_connect) return make_error(ErrorCode::kInvalidInput, "CONNECT inside a TLS tunnel is not supported");
  head.scheme = Scheme::kHttps;
  head.host = host;
  head.port = port;
  http_parser_url u;
  http_parser_url_init(&u);
  if (url.empty() || http_parser_parse_url(url.data(), url.size(), 0, &u) != 0) {
    return make_error(ErrorCode::kInvalidInput, "request target \"" + printable(url) + "\" is not a valid URL");
  }
  auto field = [&](int f) { return std::string_view(url).substr(u.field_data[f].off, u.field_data[f].len); };
  auto has = [&](int f) { return (u.field_set & (1 << f)) != 0; };
  if (has(UF_HOST)) {
    Result<Host> named = parse_host(field(UF_HOST));
    std::uint16_t named_port = has(UF_PORT) ? u.port : 443;
    if (!named || !(*named == host) || named_port != port) {
      return make_error(ErrorCode::kInvalidInput, "request target \"" + printable(url) + "\" names another host than the tunnel's (" +
                                                      host.url_host() + ":" + std::to_string(port) + ")");
    }
  } else if (url[0] != '/') {
    return make_error(ErrorCode::kInvalidInput, "request target \"" + printable(url) + "\" is not a path");
  }
  head.target = has(UF_PATH) ? std::string(field(UF_PATH)) : "/";
  if (has(UF_QUERY)) head.target += "?" + std::string(field(UF_QUERY));
  return {};
}

Result<void> fill_request_target(RequestHead& head, const std::string& url) {
  http_parser_url u;
  http_parser_url_init(&u);
  auto field = [&](int f) { return std::string_view(url).substr(u.field_data[f].off, u.field_data[f].len); };
  auto has = [&](int f) { return (u.field_set & (1 << f)) != 0; };
  if (head.is_connect) {
    if (http_parser_parse_url(url.data(), url.size(), 1, &u) != 0) {
      return make_error(ErrorCode::kInvalidInput, "CONNECT target \"" + printable(url) + "\" must be host:port");
    }
    head.scheme = Scheme::kTcp;
  } else {
    if (!url.empty() && url[0] != '/' && url != "*" && http_parser_parse_url(url.data(), url.size(), 0, &u) == 0 && has(UF_SCHEMA) &&
        has(UF_HOST)) {
      std::string schema;
      for (char c : field(UF_SCHEMA)) schema += lower(c);
      if (schema == "http") head.scheme = Scheme::kHttp;
      else if (schema == "https") head.scheme = Scheme::kHttps;
      else return make_error(ErrorCode::kInvalidInput, "scheme \"" + printable(schema) + "\" is not supported by the proxy (http or https only)");
    } else if (!url.empty() && (url[0] == '/' || url == "*")) {
      return make_error(ErrorCode::kInvalidInput, "request target \"" + printable(url) +
                                                      "\" is not absolute: use the proxy as a forward proxy (absolute URLs, "
                                                      "or CONNECT for TLS)");
    } else {
      return make_error(ErrorCode::kInvalidInput, "request target \"" + printable(url) + "\" is not a valid absolute URL");
    }
    if (has(UF_USERINFO)) {
      return make_error(ErrorCode::kInvalidInput, "request target \"" + printable(url) +
                                                      "\" carries credentials in the URL; send them in a header instead");
    }
  }
  Result<Host> host = parse_host(field(UF_HOST));
  if (!host) return make_error(ErrorCode::kInvalidInput, "request target \"" + printable(url) + "\": " + host.error().message);
  head.host = std::move(*host);
  if (has(UF_PORT)) {
    if (u.port == 0) return make_error(ErrorCode::kInvalidInput, "request target \"" + printable(url) + "\" has port 0");
    head.port = u.port;
  } else {
    head.port = head.scheme == Scheme::kHttps ? 443 : 80;
  }
  if (!head.is_connect) {
    head.target = has(UF_PATH) ? std::string(field(UF_PATH)) : "/";
    if (has(UF_QUERY)) head.target += "?" + std::string(field(UF_QUERY));
  }
  return {};
}

}  // namespace

// ---- RequestHeadParser ----

RequestHeadParser::RequestHeadParser() : parser_(std::make_unique<HttpMessageParser>(HTTP_REQUEST, nullptr)) {}

RequestHeadParser RequestHeadParser::inside_tunnel(Host host, std::uint16_t port) {
  RequestHeadParser parser;
  parser.tunnel_host_ = std::move(host);
  parser.tunnel_port_ = port;
  return parser;
}
RequestHeadParser::~RequestHeadParser() = default;
RequestHeadParser::RequestHeadParser(RequestHeadParser&&) noexcept = default;
RequestHeadParser& RequestHeadParser::operator=(RequestHeadParser&&) noexcept = default;

const Error& RequestHeadParser::error() const { return parser_->error(); }

FeedResult RequestHeadParser::feed(std::string_view data) {
  FeedResult result = parser_->feed_head(data);
  if (result.state != ParseState::kComplete || !head_.method.empty()) return result;
  const http_parser& p = parser_->parser();
  head_.method = http_method_str(static_cast<http_method>(p.method));
  head_.is_connect = p.method == HTTP_CONNECT;
  head_.http_major = p.http_major;
  head_.http_minor = p.http_minor;
  head_.headers = std::move(parser_->headers_);
  head_.keep_alive = http_should_keep_alive(&p) != 0;
  head_.body = head_.is_connect ? BodyFraming::kNone : framing_from(p, &head_.content_length);
  if (p.http_major != 1) {
    return parser_->fail("HTTP/" + std::to_string(p.http_major) + "." + std::to_string(p.http_minor) + " is not supported (HTTP/1.0 or 1.1 only)");
  }
  Result<void> target = tunnel_host_ ? fill_tunnel_target(head_, parser_->url_, *tunnel_host_, tunnel_port_)
                                     : fill_request_target(head_, parser_->url_);
  if (!target) return parser_->fail(target.error().message);
  return result;
}

FeedResult RequestHeadParser::feed_body(std::string_view data, const std::function<void(std::string_view)>& on_body) {
  return parser_->feed_body(data, on_body);
}

// ---- ResponseHeadParser ----

ResponseHeadParser::ResponseHeadParser(std::string_view request_method) {
  bool head_request = request_method == "HEAD";
  bool connect_request = request_method == "CONNECT";
  parser_ = std::make_unique<HttpMessageParser>(HTTP_RESPONSE, [head_request, connect_request](const http_parser& p) {
    if (connect_request && p.status_code / 100 == 2) return 2;  // the rest is the tunnel
    return head_request ? 1 : 0;
  });
  head_request_ = head_request;
  connect_request_ = connect_request;
}
ResponseHeadParser::~ResponseHeadParser() = default;
ResponseHeadParser::ResponseHeadParser(ResponseHeadParser&&) noexcept = default;
ResponseHeadParser& ResponseHeadParser::operator=(ResponseHeadParser&&) noexcept = default;

const Error& ResponseHeadParser::error() const { return parser_->error(); }

FeedResult ResponseHeadParser::feed(std::string_view data) {
  FeedResult result = parser_->feed_head(data);
  if (result.state != ParseState::kComplete || head_.status != 0) return result;
  const http_parser& p = parser_->parser();
  head_.status = static_cast<int>(p.status_code);
  head_.reason = std::move(parser_->status_);
  head_.http_major = p.http_major;
  head_.http_minor = p.http_minor;
  head_.headers = std::move(parser_->headers_);
  int status = head_.status;
  bool no_body = (status >= 100 && status < 200) || status == 204 || status == 304 || head_request_ ||
                 (connect_request_ && status / 100 == 2);
  if (no_body) {
    head_.body = BodyFraming::kNone;
  } else {
    head_.body = framing_from(p, &head_.content_length);
    if (head_.body == BodyFraming::kNone && !((p.flags & F_CONTENTLENGTH) && p.content_length == 0)) {
      head_.body = BodyFraming::kUntilClose;
    }
  }
  head_.keep_alive = head_.body != BodyFraming::kUntilClose && http_should_keep_alive(&p) != 0;
  return result;
}

FeedResult ResponseHeadParser::feed_body(std::string_view data, const std::function<void(std::string_view)>& on_body) {
  return parser_->feed_body(data, on_body);
}

FeedResult ResponseHeadParser::finish_body(const std::function<void(std::string_view)>& on_body) {
  return parser_->finish(on_body);
}

}  // namespace lockroom::egress
