// The DNS refuser's answers; see net_dns.h.
#include "guest/net_dns.h"

#include <cstdint>

namespace lockroom::agent {

namespace {
constexpr std::size_t kHeader = 12;
constexpr std::uint8_t kRcodeRefused = 5;

std::uint8_t at(std::string_view s, std::size_t i) { return static_cast<std::uint8_t>(s[i]); }

// The end of the first question (name, type, class), or 0 when it is not there or compressed.
std::size_t question_end(std::string_view query, std::string* name) {
  if (query.size() < kHeader || (at(query, 4) == 0 && at(query, 5) == 0)) return 0;
  std::size_t pos = kHeader;
  while (pos < query.size()) {
    std::size_t label = at(query, pos);
    if (label == 0) {
      pos += 1;
      return pos + 4 <= query.size() ? pos + 4 : 0;
    }
    if (label > 63 || pos + 1 + label > query.size()) return 0;  // a pointer or a cut label
    if (name) {
      if (!name->empty()) name->push_back('.');
      name->append(query.substr(pos + 1, label));
    }
    pos += 1 + label;
  }
  return 0;
}
}  // namespace

std::string dns_refusal(std::string_view query) {
  if (query.size() < kHeader || (at(query, 2) & 0x80)) return {};  // too short, or an answer
  std::size_t end = question_end(query, nullptr);
  std::string reply(query.substr(0, kHeader));
  reply[2] = static_cast<char>(0x80 | (at(query, 2) & 0x79));  // QR, the opcode, RD
  reply[3] = static_cast<char>(kRcodeRefused);
  reply[4] = 0;
  reply[5] = end ? 1 : 0;
  for (std::size_t i = 6; i < kHeader; ++i) reply[i] = 0;
  if (end) reply.append(query.substr(kHeader, end - kHeader));
  return reply;
}

std::string dns_question_name(std::string_view query) {
  std::string name;
  if (!question_end(query, &name)) return {};
  for (char& c : name)
    if (static_cast<unsigned char>(c) < 0x21 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  return name.empty() ? "." : name;
}

}  // namespace lockroom::agent
