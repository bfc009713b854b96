// The DNS refuser's pure part: the REFUSED answer to a query, so a program that ignores the proxy
// variables learns at once that names do not resolve in the sandbox (instead of waiting for a
// resolver timeout). See guest/net_service.h for the socket and protocol/channel.md ("Network").
#pragma once

#include <string>
#include <string_view>

namespace lockroom::agent {

// The answer to `query` (RFC 1035 section 4.1.1): its id, opcode, RD flag and first question,
// QR set, RCODE 5 (REFUSED), no records. Empty when the bytes are not a DNS query.
std::string dns_refusal(std::string_view query);
// The first question's name, dotted ("example.com"), or empty when there is none readable.
std::string dns_question_name(std::string_view query);

}  // namespace lockroom::agent
