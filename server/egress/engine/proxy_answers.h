// The answers the proxy itself gives a guest's HTTP client when it will not (or cannot) relay a
// request: short plain-text bodies a person understands, with the status a client acts on.
//
//   403  the policy denied the host, the address it resolved to, or a sentinel went astray
//   502  connecting (or talking TLS) to the upstream failed, naming the address and the reason
//   504  connecting timed out, or the server sent nothing for the idle timeout
//   503  the sandbox has its limit of upstream connections open
//   400  the request could not be read (or its head is over the limit)
//   408  the request head did not arrive in time
// Every answer closes the connection (Connection: close). Pure; no I/O.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace lockroom::egress {

// "HTTP/1.1 403 Forbidden" ... with `text` (a newline is added) as the body.
std::string proxy_answer(int status, std::string_view text);

// "lockroom: example.com:443 is not allowed by this sandbox's network policy (rule: default)"
std::string denied_text(std::string_view host_port, std::string_view rule);

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
