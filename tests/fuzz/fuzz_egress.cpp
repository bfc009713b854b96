// fuzz-egress: libFuzzer over what a hostile guest (or upstream server) sends the egress proxy:
// HTTP request and response heads with their bodies, TLS ClientHellos, sentinels in bodies, and
// policy/secret JSON.
//
// Input layout (every byte string is a valid input):
//   byte 0     mode, by value % 4: 0 forward-proxy request (head, body, injection), 1 request
//              inside a terminated tunnel, 2 upstream response, 3 TLS ClientHello
//   byte 1     chunking: 0 feeds the rest at once; otherwise pieces of (byte1 % 61) + 1 bytes
//   the rest   the bytes
// In every mode it also runs the sentinel scanner over the bytes in those pieces and, when the
// bytes parse as JSON, the policy and secret readers. The target checks:
//   - consumed counts never exceed what was fed, and a head never exceeds 64 KiB or 100 headers;
//   - chunked parsing ends in the same state, with the same head, as parsing all at once;
//   - an upstream head serialised from a parsed request parses again (inside a tunnel to the same
//     host) to the same method, target and Host, and carries no Proxy-* or hop-by-hop header;
//   - after secret injection, no sentinel of a secret is left in a header for its own hosts,
//     and a request that is not blocked has no sentinel for a host outside its scope;
//   - the ClientHello reader fed in pieces agrees with the one-shot parse, and an SNI it reports
//     is a valid, normalised host name;
//   - the streaming sentinel scanner finds exactly what find_sentinels finds on the whole input;
//   - no exception escapes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "server/egress/policy/http_head.h"
#include "server/egress/policy/policy_json.h"
#include "server/egress/policy/secrets.h"
#include "server/egress/policy/sentinel.h"
#include "server/egress/policy/tls_client_hello.h"

namespace {

using namespace lockroom::egress;

void check(bool condition) {
  if (!condition) std::abort();
}

std::vector<std::string_view> pieces(std::string_view data, std::uint8_t chunking) {
  std::vector<std::string_view> out;
  if (chunking == 0) {
    out.push_back(data);
    return out;
  }
  std::size_t size = chunking % 61 + 1;
  for (std::size_t pos = 0; pos < data.size(); pos += size) out.push_back(data.substr(pos, size));
  return out;
}

const std::vector<Secret>& fuzz_secrets() {
  static const std::vector<Secret> secrets = [] {
    json declared = json::array({{{"name", "gh"}, {"from", {{"env", "X"}}}, {"hosts", {"api.example.com", "*.example.org"}}},
                                 {{"name", "gh_token"}, {"from", {{"env", "Y"}}}, {"hosts", {"a.example"}},
                                  {"inject", {{"header", "Authorization"}, {"value", "Bearer {value}"}}}}});
    return *parse_secrets(declared);
  }();
  return secrets;
}

template <typename Parser>
struct HeadRun {
  ParseState state = ParseState::kNeedMore;
  std::size_t consumed = 0;
};

template <typename Parser>
HeadRun<Parser> run_head(Parser& parser, const std::vector<std::string_view>& parts) {
  HeadRun<Parser> run;
  for (std::string_view part : parts) {
    FeedResult r = parser.feed(part);
    check(r.consumed <= part.size());
    run.consumed += r.consumed;
    run.state = r.state;
    if (r.state != ParseState::kNeedMore) break;
  }
  if (run.state == ParseState::kComplete) check(run.consumed <= kMaxHeadBytes);
  return run;
}

void check_upstream_head(const RequestHead& head) {
  if (head.is_connect) return;
  std::string upstream = serialize_request_for_upstream(head);
  RequestHeadParser again = RequestHeadParser::inside_tunnel(head.host, head.port);
  FeedResult r = again.feed(upstream);
  check(r.state == ParseState::kComplete && r.consumed == upstream.size());
  check(again.head().method == head.method);
  check(again.head().target == head.target);
  const std::string* host = find_header(again.head().headers, "Host");
  check(host != nullptr && *host == host_header_value(head));
  for (const HttpHeader& h : again.head().headers) {
    check(!(h.name.size() >= 6 && header_name_equals(std::string_view(h.name).substr(0, 6), "Proxy-")));
    check(!header_name_equals(h.name, "Keep-Alive") && !header_name_equals(h.name, "Upgrade") && !header_name_equals(h.name, "TE"));
  }
}

void check_injection(const RequestHead& head) {
  const std::vector<Secret>& secrets = fuzz_secrets();
  SecretValues values = {{"gh", "value-one"}, {"gh_token", "value-two"}};
  auto result = inject_secrets(head, secrets, values);
  if (!result.ok() || result->blocked) return;
  std::vector<std::string> sentinels = sentinels_of(secrets);
  for (const HttpHeader& h : result->head.headers) {
    for (const SentinelMatch& m : find_sentinels(h.value, sentinels)) {
      // A sentinel left in a value can only be one that the replacement itself formed from the
      // surrounding text; it must then belong to a host in scope.
      check(secrets[m.sentinel].scoped_to(head.host));
    }
  }
}

void fuzz_request(std::string_view data, std::uint8_t chunking, bool tunnel) {
  Host tunnel_host = *parse_host("api.example.com");
  RequestHeadParser chunked = tunnel ? RequestHeadParser::inside_tunnel(tunnel_host, 443) : RequestHeadParser();
  RequestHeadParser whole = tunnel ? RequestHeadParser::inside_tunnel(tunnel_host, 443) : RequestHeadParser();
  auto a = run_head(chunked, pieces(data, chunking));
  auto b = run_head(whole, {data});
  check(a.state == b.state);
  if (a.state != ParseState::kComplete) return;
  check(a.consumed == b.consumed);
  const RequestHead& head = chunked.head();
  check(head.method == whole.head().method && head.target == whole.head().target && head.headers == whole.head().headers);
  check(head.headers.size() <= kMaxHeaderCount);
  check(head.port != 0);
  check_upstream_head(head);
  check_injection(head);
  std::string body;
  std::size_t used = 0;
  for (std::string_view part : pieces(data.substr(a.consumed), chunking)) {
    FeedResult r = chunked.feed_body(part, [&](std::string_view p) { body += p; });
    check(r.consumed <= part.size());
    used += r.consumed;
    if (r.state != ParseState::kNeedMore) break;
  }
  check(used <= data.size() - a.consumed);
}

void fuzz_response(std::string_view data, std::uint8_t chunking) {
  static const char* kMethods[] = {"GET", "HEAD", "CONNECT", "POST"};
  ResponseHeadParser chunked(kMethods[chunking % 4]);
  ResponseHeadParser whole(kMethods[chunking % 4]);
  auto a = run_head(chunked, pieces(data, chunking));
  auto b = run_head(whole, {data});
  check(a.state == b.state);
  if (a.state != ParseState::kComplete) return;
  check(a.consumed == b.consumed && chunked.head().status == whole.head().status && chunked.head().body == whole.head().body);
  std::string relayed = serialize_response_for_client(chunked.head());
  check(relayed.size() >= 4 && relayed.compare(relayed.size() - 4, 4, "\r\n\r\n") == 0);
  for (std::string_view part : pieces(data.substr(a.consumed), chunking)) {
    FeedResult r = chunked.feed_body(part, nullptr);
    if (r.state != ParseState::kNeedMore) return;
  }
  (void)chunked.finish_body(nullptr);
}

void fuzz_client_hello(std::string_view data, std::uint8_t chunking) {
  ClientHelloResult whole = parse_client_hello(data);
  ClientHelloReader reader;
  ClientHelloResult piecewise;
  for (std::string_view part : pieces(data, chunking)) {
    piecewise = reader.feed(part);
    if (piecewise.status != ClientHelloStatus::kNeedMore) break;
  }
  check(whole.status == piecewise.status);
  if (whole.status != ClientHelloStatus::kComplete) return;
  check(whole.length <= data.size() && whole.length == piecewise.length);
  check(whole.info.sni == piecewise.info.sni && whole.info.alpn == piecewise.info.alpn);
  if (whole.info.sni) {
    auto host = parse_host(*whole.info.sni);
    check(host.ok() && !host->is_address() && host->name == *whole.info.sni);
  }
}

void fuzz_scanner(std::string_view data, std::uint8_t chunking) {
  std::vector<std::string> sentinels = sentinels_of(fuzz_secrets());
  std::vector<SentinelMatch> expected = find_sentinels(data, sentinels);
  SentinelScanner scanner(sentinels);
  std::vector<SentinelMatch> found;
  for (std::string_view part : pieces(data, chunking | 1)) {
    auto got = scanner.feed(part);
    found.insert(found.end(), got.begin(), got.end());
    check(scanner.held_bytes() < 64);
  }
  auto rest = scanner.finish();
  found.insert(found.end(), rest.begin(), rest.end());
  check(found.size() == expected.size());
  for (std::size_t i = 0; i < found.size(); ++i) {
    check(found[i].offset == expected[i].offset && found[i].sentinel == expected[i].sentinel);
  }
}

void fuzz_json(std::string_view data) {
  json value = json::parse(data, nullptr, false);
  if (value.is_discarded()) return;
  auto policy = parse_policy(value);
  if (policy.ok()) check(*parse_policy(policy_to_json(*policy)) == *policy);
  (void)parse_secrets(value);
  if (value.is_object() && value.contains("secrets")) (void)parse_secrets(value["secrets"]);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  if (size < 2) return 0;
  std::string_view data(reinterpret_cast<const char*>(bytes) + 2, size - 2);
  std::uint8_t chunking = bytes[1];
  switch (bytes[0] % 4) {
    case 0: fuzz_request(data, chunking, false); break;
    case 1: fuzz_request(data, chunking, true); break;
    case 2: fuzz_response(data, chunking); break;
    default: fuzz_client_hello(data, chunking); break;
  }
  fuzz_scanner(data, chunking);
  fuzz_json(data);
  return 0;
}
