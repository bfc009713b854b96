// The answers the proxy itself gives a guest's HTTP client when it will not (or cannot) relay a
// request: short plain-text bodies a person understands, with the status a client acts on.
//
//   403  the policy denied the host, the address it resolved to, or a sentinel went astray
//   502  connecting (or talking TLS) to the upstream failed, naming the address and the reason
//   504  connecting timed out, or the server sent nothing for the idle timeout
//   503  the sandbox has its limit of upstream connections open
//   400  the request could not be read (or its head is over the limit)
//   408  the request head did not arrive in time
// Every answer closes the connection (Connection: close). With a cause, the answer also names it
// in headers, because a client shows headers where it hides bodies (curl shows only "CONNECT
// tunnel failed, response 403", but curl -v and GIT_CURL_VERBOSE print the headers):
//   Proxy-Status: lockroom; error=http_request_denied; details="rule default: no rule allows ..."
//   X-Lockroom-Rule: default
//   X-Lockroom-Reason: no rule allows https example.com:443
// (Proxy-Status is RFC 9209; its error type follows from the status and the rule.) Pure; no I/O.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace lockroom::egress {

// Why the proxy answered itself: the rule that decided and the audit reason (empty: no headers).
struct AnswerCause {
  std::string_view rule;
  std::string_view reason;
};

// "HTTP/1.1 403 Forbidden" ... with `text` (a newline is added) as the body.
std::string proxy_answer(int status, std::string_view text, const AnswerCause& cause = {});

// RFC 9209's error type for an answer: "http_request_denied", "destination_ip_prohibited", ...
std::string_view proxy_status_error(int status, std::string_view rule, std::string_view reason);

// A header value from any text: printable ASCII only (others become '?'), at most 400 bytes.
std::string header_safe(std::string_view text);

// "lockroom: example.com:443 is not allowed by this sandbox's network policy (rule: default)",
// and with a reason ": no rule allows https example.com:443" after it.
std::string denied_text(std::string_view host_port, std::string_view rule, std::string_view reason = {});

// "example.com:443", "[::1]:8080"
std::string host_port_text(std::string_view url_host, unsigned port);

// "30 s", "250 ms": a limit in a message.
std::string duration_text(std::chrono::milliseconds duration);

// SOCKS5 reply codes (RFC 1928) for Proxy::accept_socks verdicts.
enum SocksReply : int {
  kSocksSucceeded = 0,
  kSocksGeneralFailure = 1,
  kSocksNotAllowed = 2,
  kSocksHostUnreachable = 4,
  kSocksConnectionRefused = 5,
  kSocksTtlExpired = 6,
};

}  // namespace lockroom::egress
