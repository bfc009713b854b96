// Host name normalisation; see host_name.h.
#include "server/egress/policy/host_name.h"

namespace lockroom::egress {

namespace {

std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text.substr(0, 80)) {
    unsigned char u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u >= 0x7f) ? '?' : c;
  }
  if (text.size() > 80) out += "...";
  return out + "\"";
}

Error invalid(std::string_view text, const std::string& why) {
  return make_error(ErrorCode::kInvalidInput, quoted(text) + " is not a valid host name: " + why);
}

bool is_label_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

}  // namespace

Result<std::string> normalize_host_name(std::string_view text) {
  std::string name;
  name.reserve(text.size());
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x80) {
      return invalid(text, "it has non-ASCII characters; write an internationalised name in its ASCII (xn--) form");
    }
    name += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  }
  if (!name.empty() && name.back() == '.') name.pop_back();
  if (name.empty()) return invalid(text, "it is empty");
  if (name.size() > kMaxHostNameLength) {
    return invalid(text, "it is " + std::to_string(name.size()) + " characters long; the limit is 253");
  }
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find('.', start);
    if (end == std::string::npos) end = name.size();
    std::string_view label(name.data() + start, end - start);
    if (label.empty()) return invalid(text, "it has an empty label (two dots in a row, or a leading dot)");
    if (label.size() > 63) return invalid(text, "label \"" + std::string(label.substr(0, 20)) + "...\" is longer than 63 characters");
    for (char c : label) {
      if (!is_label_char(c)) {
        std::string shown = static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? "a control character" : "'" + std::string(1, c) + "'";
        return invalid(text, "label " + quoted(label) + " has " + shown + "; only letters, digits, '-' and '_' are allowed");
      }
    }
    if (label.front() == '-' || label.back() == '-') {
      return invalid(text, "label " + quoted(label) + " starts or ends with '-'");
    }
    start = end + 1;
  }
  return name;
}

Result<Host> parse_host(std::string_view text) {
  if (text.empty()) return invalid(text, "it is empty");
  if (looks_like_ip_literal(text)) {
    Result<IpAddress> address = parse_ip_literal(text);
    if (!address) return address.error();
    IpAddress canonical = address->canonical();
    return Host{canonical.to_string(), canonical};
  }
  Result<std::string> name = normalize_host_name(text);
  if (!name) return name.error();
  return Host{std::move(*name), std::nullopt};
}

}  // namespace lockroom::egress
