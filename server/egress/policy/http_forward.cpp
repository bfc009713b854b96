// Serialising heads for the other side of the proxy: the request head sent upstream and the
// response head relayed to the client; see http_head.h.
#include "server/egress/policy/http_head.h"

namespace lockroom::egress {

namespace {

bool is_hop_by_hop(std::string_view name, const HttpHeaders& headers) {
  for (const char* hop : {"Connection", "Keep-Alive", "Proxy-Connection", "TE", "Trailer", "Upgrade"}) {
    if (header_name_equals(name, hop)) return true;
  }
  if (name.size() >= 6 && header_name_equals(name.substr(0, 6), "Proxy-")) return true;
  // Headers listed in Connection are hop-by-hop too, except the ones that frame the message or
  // name its host: dropping those on a client's say-so would desynchronise the two sides.
  if (header_name_equals(name, "Content-Length") || header_name_equals(name, "Transfer-Encoding") ||
      header_name_equals(name, "Host")) {
    return false;
  }
  for (const HttpHeader& header : headers) {
    if (!header_name_equals(header.name, "Connection")) continue;
    std::string_view list = header.value;
    while (!list.empty()) {
      std::size_t comma = list.find(',');
      std::string_view token = list.substr(0, comma);
      while (!token.empty() && (token.front() == ' ' || token.front() == '\t')) token.remove_prefix(1);
      while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
      if (header_name_equals(token, name)) return true;
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
  }
  return false;
}

std::string version_text(int major, int minor) { return "HTTP/" + std::to_string(major) + "." + std::to_string(minor); }

}  // namespace

std::string host_header_value(const RequestHead& head) {
  std::string value = head.host.url_host();
  std::uint16_t default_port = head.scheme == Scheme::kHttps ? 443 : 80;
  if (head.port != default_port) value += ":" + std::to_string(head.port);
  return value;
}

std::string serialize_request_for_upstream(const RequestHead& head) {
  // Host first, from the target the policy decided on; every Host the client sent is dropped.
  std::string out = head.method + " " + head.target + " " + version_text(head.http_major, head.http_minor) + "\r\n";
  out += "Host: " + host_header_value(head) + "\r\n";
  for (const HttpHeader& header : head.headers) {
    if (header_name_equals(header.name, "Host") || is_hop_by_hop(header.name, head.headers)) continue;
    out += header.name + ": " + header.value + "\r\n";
  }
  if (!head.keep_alive) out += "Connection: close\r\n";
  out += "\r\n";
  return out;
}

std::string serialize_response_for_client(const ResponseHead& head) {
  std::string out = version_text(head.http_major, head.http_minor) + " " + std::to_string(head.status) + " " + head.reason + "\r\n";
  for (const HttpHeader& header : head.headers) {
    if (is_hop_by_hop(header.name, head.headers)) continue;
    out += header.name + ": " + header.value + "\r\n";
  }
  if (!head.keep_alive) out += "Connection: close\r\n";
  out += "\r\n";
  return out;
}

}  // namespace lockroom::egress
