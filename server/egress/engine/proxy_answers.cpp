// Proxy answers; see proxy_answers.h.
#include "server/egress/engine/proxy_answers.h"

namespace lockroom::egress {

namespace {

const char* reason_phrase(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 408: return "Request Timeout";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Error";
  }
}

}  // namespace

std::string proxy_answer(int status, std::string_view text) {
  std::string body(text);
  body += '\n';
  std::string answer = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) + "\r\n";
  answer += "Content-Type: text/plain; charset=utf-8\r\n";
  answer += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  answer += "Connection: close\r\n\r\n";
  return answer + body;
}

std::string denied_text(std::string_view host_port, std::string_view rule) {
  return "lockroom: " + std::string(host_port) + " is not allowed by this sandbox's network policy (rule: " +
         std::string(rule) + ")";
}

std::string host_port_text(std::string_view url_host, unsigned port) {
  return std::string(url_host) + ":" + std::to_string(port);
}

std::string duration_text(std::chrono::milliseconds duration) {
  if (duration.count() % 1000 == 0) return std::to_string(duration.count() / 1000) + " s";
  return std::to_string(duration.count()) + " ms";
}

}  // namespace lockroom::egress
