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

std::string_view proxy_status_error(int status, std::string_view rule, std::string_view reason) {
  switch (status) {
    case 400:
    case 408: return "http_request_error";
    case 403: return rule == "address check" ? "destination_ip_prohibited" : "http_request_denied";
    case 502: return "destination_unavailable";
    case 503: return "connection_limit_reached";
    case 504: return reason.find("idle") != std::string_view::npos ? "http_response_timeout" : "connection_timeout";
    default: return "proxy_internal_response";
  }
}

std::string header_safe(std::string_view text) {
  constexpr std::size_t kMax = 400;
  std::string out;
  for (char c : text.substr(0, kMax)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (text.size() > kMax) out += "...";
  return out;
}

std::string proxy_answer(int status, std::string_view text, const AnswerCause& cause) {
  std::string body(text);
  body += '\n';
  std::string answer = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) + "\r\n";
  answer += "Content-Type: text/plain; charset=utf-8\r\n";
  if (!cause.rule.empty() || !cause.reason.empty()) {
    std::string rule = header_safe(cause.rule), reason = header_safe(cause.reason);
    std::string details = rule.empty() ? reason : "rule " + rule + (reason.empty() ? "" : ": " + reason);
    std::string quoted;  // an RFC 8941 sf-string
    for (char c : details) {
      if (c == '"' || c == '\\') quoted += '\\';
      quoted += c;
    }
    answer += "Proxy-Status: lockroom; error=" + std::string(proxy_status_error(status, cause.rule, cause.reason)) +
              "; details=\"" + quoted + "\"\r\n";
    if (!rule.empty()) answer += "X-Lockroom-Rule: " + rule + "\r\n";
    if (!reason.empty()) answer += "X-Lockroom-Reason: " + reason + "\r\n";
  }
  answer += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  answer += "Connection: close\r\n\r\n";
  return answer + body;
}

std::string denied_text(std::string_view host_port, std::string_view rule, std::string_view reason) {
  std::string text = "lockroom: " + std::string(host_port) + " is not allowed by this sandbox's network policy (rule: " +
                     std::string(rule) + ")";
  if (!reason.empty()) text += ": " + std::string(reason);
  return text;
}

std::string host_port_text(std::string_view url_host, unsigned port) {
  return std::string(url_host) + ":" + std::to_string(port);
}

std::string duration_text(std::chrono::milliseconds duration) {
  if (duration.count() % 1000 == 0) return std::to_string(duration.count() / 1000) + " s";
  return std::to_string(duration.count()) + " ms";
}

}  // namespace lockroom::egress
