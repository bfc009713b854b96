// Egress over HTTPS with real clients in a real guest (curl, and git's https helper when the
// image carries it), through lockroom's policy proxy to a real HTTPS server on the host's
// loopback whose certificate comes from a test CA (tests/unit/egress_tls/https_test_server.h):
//   - a host without a secret is tunnelled as is: the guest sees the upstream's own chain;
//   - a host with a secret is intercepted: the guest sees the sandbox's CA (trusted through the
//     agent's CURL_CA_BUNDLE / GIT_SSL_CAINFO), the upstream gets the real secret, the guest only
//     ever holds the sentinel;
//   - the SNI is checked against the policy as well as the CONNECT target;
//   - approvals: not declared, deny, no answer (timeout), allow once, allow for the sandbox,
//     asked of a scripted editor through the editor face's own network/approve code;
//   - every decision is one audit line and one network/event, and they agree, and say which
//     approvals were the user's answers and which were not (not asked, no answer and why);
//   - a refused CONNECT names its rule and reason where curl -v and git show them (headers).
//
// The host's side must trust the test CA for the intercepted upstream: the sandbox's
// NetworkRequest names it in upstream_ca_files (what SandboxManager fills from
// ManagerConfig::upstream_ca_files), so nothing is put into the process environment.
#include <cstdlib>
#include <fstream>
#include <optional>

#include "server/common/paths.h"
#include "server/egress/policy/policy_json.h"
#include "server/egress/policy/secrets.h"
#include "server/vm/image/image_store.h"
#include "tests/integration/sandbox_world.h"
#include "tests/unit/egress_tls/https_test_server.h"

using namespace lockroom;
using namespace lockroom::testing;
using protocol::json;

namespace {

constexpr const char* kSecretValue = "tls-secret-value-4f1e";
// What the upstream answers every request with: a dumb-protocol ref list, so `git ls-remote`
// can read it as well as curl.
constexpr const char* kRefs = "0123456789abcdef0123456789abcdef01234567\trefs/heads/main\n";

// Sets an environment variable for one scope and puts the old value back.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::unique_ptr<HttpsTestServer> start_upstream() {
  HttpsTestServer::Options options;
  options.names = {"localhost", "127.0.0.1"};
  options.body = kRefs;
  std::string error;
  auto server = HttpsTestServer::start(options, &error);
  INFO(error);
  REQUIRE(server);
  return server;
}

core::NetworkRequest network_request(const json& policy, const json& secrets) {
  auto parsed = egress::parse_policy(policy);
  INFO((parsed.ok() ? std::string() : parsed.error().message));
  REQUIRE(parsed.ok());
  auto parsed_secrets = egress::parse_secrets(secrets);
  REQUIRE(parsed_secrets.ok());
  return core::NetworkRequest{*parsed, *parsed_secrets, {}};
}

json allow(const std::string& host, int port, const std::string& name) {
  return json{{"action", "allow"}, {"host", host}, {"ports", json::array({port})}, {"name", name}};
}

// The sandbox, whose host proxy trusts `upstream`'s test CA; the guest gets that CA in
// /tmp/upstream-ca.pem for the requests it makes to the upstream directly (tunnelled).
struct HttpsSandbox {
  std::string id;
  std::filesystem::path audit_log;
};
HttpsSandbox create_sandbox(World& w, const HttpsTestServer& upstream, core::NetworkRequest network) {
  core::CreateRequest request;
  request.network = std::move(network);
  request.network->upstream_ca_files = {upstream.ca_file()};
  std::optional<Result<core::CreateResult>> created;
  w.manager->create(request, nullptr, [&](Result<core::CreateResult> r) { created = std::move(r); });
  w.run_until([&] { return created.has_value(); });
  INFO((created->ok() ? std::string() : created->error().message));
  REQUIRE(created->ok());
  REQUIRE((*created)->audit_log);
  HttpsSandbox sandbox{(*created)->sandbox_id, *(*created)->audit_log};
  std::string pid = w.start(sandbox.id, {"sh", "-c", "printf '%s' \"$1\" > /tmp/upstream-ca.pem", "sh", upstream.ca_pem()});
  REQUIRE(w.wait_exit(pid).exit_code == 0);
  std::string curl = w.sh(sandbox.id, "curl --version | head -n 1");
  INFO("the guest image has no curl (install curl on the host and rebuild the image): " << curl);
  REQUIRE(curl.rfind("curl ", 0) == 0);
  return sandbox;
}

// The guest's script with the proxy used for every host (NO_PROXY would name localhost).
std::string guest(World& w, const std::string& sandbox, const std::string& script) {
  return w.sh(sandbox, "export no_proxy= NO_PROXY=; " + script);
}

// The certificate issuer curl -v printed ("*  issuer: CN=...").
std::string issuer(const std::string& verbose) {
  auto at = verbose.find("issuer: ");
  if (at == std::string::npos) return "";
  return verbose.substr(at + 8, verbose.find('\n', at) - at - 8);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The sandbox's decisions as events, checked against its audit log line by line (neither ever
// holds the secret's value); returns them.
std::vector<egress::AuditRecord> decisions_match_audit(World& w, const HttpsSandbox& sandbox) {
  std::vector<egress::AuditRecord> events;
  for (const auto& [id, record] : w.events.network)
    if (id == sandbox.id) events.push_back(record);
  std::ifstream log(sandbox.audit_log);
  std::string line;
  std::size_t index = 0;
  while (std::getline(log, line)) {
    CHECK_FALSE(has(line, kSecretValue));
    auto parsed = egress::parse_audit_line(line);
    REQUIRE(parsed.ok());
    REQUIRE(index < events.size());
    CHECK(egress::audit_record_to_json(*parsed) == egress::audit_record_to_json(events[index]));
    ++index;
  }
  CHECK(index == events.size());
  for (const auto& record : events) CHECK_FALSE(has(egress::audit_record_to_json(record).dump(), kSecretValue));
  return events;
}

std::string summary(const egress::AuditRecord& r) {
  std::string text = r.decision + " " + r.scheme + " " + r.host + ":" + std::to_string(r.port) + " rule=" + r.rule;
  if (!r.sni.empty()) text += " sni=" + r.sni;
  if (!r.method.empty()) text += " " + r.method;  // CONNECT for a tunnel, or the request inside an intercepted one
  if (!r.path.empty()) text += " " + r.path;
  for (const auto& s : r.secrets) text += " secret=" + s;
  return text;
}

}  // namespace

TEST_CASE("HTTPS from a guest: tunnelled as is, intercepted with the secret injected on the host, SNI checked, audited",
          "[sandbox][network][https]") {
  ScopedEnv secret("LOCKROOM_IT_TLS_TOKEN", kSecretValue);
  auto upstream = start_upstream();
  const int port = upstream->port();
  const std::string p = std::to_string(port);
  World& w = world();
  json policy{{"rules", json::array({allow("127.0.0.1", port, "upstream-address"), allow("localhost", port, "upstream-name"),
                                     json{{"action", "deny"}, {"host", "evil.test"}, {"name", "evil"}}})},
              {"defaultAllow", false}};
  json secrets = json::array({json{{"name", "tls_token"},
                                   {"from", {{"env", "LOCKROOM_IT_TLS_TOKEN"}}},
                                   {"hosts", json::array({"localhost"})},
                                   {"inject", {{"header", "Authorization"}, {"value", "Bearer {value}"}}}}});
  HttpsSandbox sb = create_sandbox(w, *upstream, network_request(policy, secrets));

  // The image that runs says what it carries.
  auto image = vm::image::load_image(vm::image::images_dir(default_paths().cache) / *vm::image::current_image_hash(default_paths().cache));
  REQUIRE(image.ok());
  bool image_has_curl = false, image_has_git_https = false;
  for (const auto& tool : image->manifest.tools) {
    image_has_curl |= tool.name == "curl";
    image_has_git_https |= tool.name == "git-remote-https";
  }
  CHECK(image_has_curl);
  auto roundtrip = vm::image::manifest_from_json(vm::image::manifest_to_json(image->manifest));
  REQUIRE(roundtrip.ok());
  CHECK(roundtrip->tools == image->manifest.tools);
  CHECK(roundtrip->missing_tools == image->manifest.missing_tools);

  // The guest trusts the sandbox CA through the variables curl and git read, and holds only the
  // sentinel: not in any process's environment, not in /etc or /tmp (looked at as root, who can
  // read every process's environment).
  std::string env = w.sh(sb.id,
                         "export no_proxy= NO_PROXY=; echo \"$CURL_CA_BUNDLE\" \"$GIT_SSL_CAINFO\" \"$SSL_CERT_FILE\"; echo $LOCKROOM_IT_TLS_TOKEN; "
                         "cat /proc/[0-9]*/environ | tr '\\0' '\\n' | grep -c " + std::string(kSecretValue) + "; "
                         "grep -rl " + kSecretValue + " /etc /tmp | wc -l",
                         true);
  auto first_line = env.substr(0, env.find('\n'));
  auto bundle = first_line.substr(0, first_line.find(' '));
  CHECK_FALSE(bundle.empty());
  CHECK(first_line == bundle + " " + bundle + " " + bundle);
  CHECK(env.substr(first_line.size() + 1) == "LOCKROOM_SECRET_TLS_TOKEN\n0\n0\n");

  // No secret for 127.0.0.1: tunnelled end to end. The guest sees the upstream's own chain (it
  // verifies it with the upstream's CA), the upstream gets the request exactly as sent.
  std::string tunnelled = guest(w, sb.id, "curl -sS -v --cacert /tmp/upstream-ca.pem https://127.0.0.1:" + p + "/tunnel");
  INFO(tunnelled);
  CHECK(has(tunnelled, kRefs));
  CHECK(issuer(tunnelled) == "CN=lockroom sandbox https-test-server CA");
  CHECK(has(upstream->last_request(), "GET /tunnel HTTP/1.1\r\n"));
  CHECK_FALSE(has(upstream->last_request(), "Authorization"));

  // localhost has the secret: intercepted with the sandbox's CA, which curl trusts through
  // CURL_CA_BUNDLE alone. The upstream gets the real value (injected header, and the sentinel the
  // guest put in another header swapped); the guest saw only the sentinel.
  std::string intercepted =
      guest(w, sb.id, "curl -sS -v -H \"X-Token: $LOCKROOM_IT_TLS_TOKEN\" https://localhost:" + p + "/intercept");
  INFO(intercepted);
  CHECK(has(intercepted, kRefs));
  CHECK(issuer(intercepted) == "CN=lockroom sandbox " + sb.id + " CA");
  CHECK(has(intercepted, "> X-Token: LOCKROOM_SECRET_TLS_TOKEN\r\n"));
  CHECK_FALSE(has(intercepted, kSecretValue));
  std::string got = upstream->last_request();
  CHECK(has(got, "GET /intercept HTTP/1.1\r\n"));
  CHECK(has(got, std::string("Authorization: Bearer ") + kSecretValue + "\r\n"));
  CHECK(has(got, std::string("X-Token: ") + kSecretValue + "\r\n"));
  CHECK(upstream->last_sni() == "localhost");

  // git's https helper (when the image has it) goes the same way, with the guest's trust settings.
  if (image_has_git_https) {
    std::string refs = guest(w, sb.id, "git ls-remote https://localhost:" + p + "/repo.git");
    INFO(refs);
    CHECK(refs == kRefs);
    CHECK(has(upstream->last_request(), std::string("Authorization: Bearer ") + kSecretValue + "\r\n"));
    CHECK(has(upstream->last_request(), "User-Agent: git/"));
  } else {
    WARN("the guest image has no git-remote-https; git over https is not tested");
  }

  // A CONNECT to an allowed address whose ClientHello names a denied host is refused before any
  // byte reaches the upstream.
  int handshakes = upstream->handshakes();
  std::string sni = guest(w, sb.id, "curl -sS --cacert /tmp/upstream-ca.pem --connect-to evil.test:443:127.0.0.1:" + p +
                                        " https://evil.test/sni; echo rc=$?");
  INFO(sni);
  CHECK_FALSE(has(sni, "rc=0"));
  CHECK_FALSE(has(sni, kRefs));
  CHECK(upstream->handshakes() == handshakes);

  // A CONNECT the policy refuses: curl alone prints "CONNECT tunnel failed, response 403"; curl -v
  // and git with GIT_CURL_VERBOSE also print the proxy's headers, which name the rule and why.
  std::string refused = guest(w, sb.id, "curl -sS -v https://evil.test/x; echo rc=$?");
  INFO(refused);
  CHECK(has(refused, "CONNECT tunnel failed, response 403"));
  CHECK(has(refused, "< X-Lockroom-Rule: evil"));
  CHECK(has(refused, "< X-Lockroom-Reason: https evil.test:443 is denied by rule evil (evil.test)"));
  CHECK(has(refused, "< Proxy-Status: lockroom; error=http_request_denied; details=\"rule evil: "));
  if (image_has_git_https) {
    std::string git_refused = guest(w, sb.id, "git ls-remote https://evil.test/repo.git; echo rc=$?; "
                                              "GIT_CURL_VERBOSE=1 git ls-remote https://evil.test/repo.git 2>&1 | grep -i lockroom");
    INFO(git_refused);
    CHECK(has(git_refused, "CONNECT tunnel failed, response 403"));
    CHECK(has(git_refused, "X-Lockroom-Reason: https evil.test:443 is denied by rule evil (evil.test)"));
  }

  std::vector<std::string> seen;
  for (const auto& record : decisions_match_audit(w, sb)) seen.push_back(summary(record));
  INFO(::Catch::Detail::stringify(seen));
  // One record per decision: a tunnel is one (CONNECT), an intercepted tunnel one per request.
  std::vector<std::string> expected = {
      "allow https 127.0.0.1:" + p + " rule=upstream-address CONNECT",
      "allow https localhost:" + p + " rule=upstream-name sni=localhost GET /intercept secret=tls_token",
  };
  if (image_has_git_https) {  // git's dumb-protocol discovery: the refs, then HEAD
    expected.push_back("allow https localhost:" + p + " rule=upstream-name sni=localhost GET /repo.git/info/refs?service=git-upload-pack secret=tls_token");
    expected.push_back("allow https localhost:" + p + " rule=upstream-name sni=localhost GET /repo.git/HEAD secret=tls_token");
  }
  expected.push_back("deny https 127.0.0.1:" + p + " rule=evil sni=evil.test CONNECT");
  expected.push_back("deny https evil.test:443 rule=evil CONNECT");
  if (image_has_git_https) {  // git ls-remote, plain and verbose
    expected.push_back("deny https evil.test:443 rule=evil CONNECT");
    expected.push_back("deny https evil.test:443 rule=evil CONNECT");
  }
  CHECK(seen == expected);
  w.destroy(sb.id);
}

TEST_CASE("approvals from a guest: not declared, deny, no answer, allow once, allow for the sandbox", "[sandbox][network][https]") {
  auto upstream = start_upstream();
  const int port = upstream->port();
  const std::string p = std::to_string(port);
  World& w = world();
  EditorStub& editor = w.editor_stub();
  // Only the address is named (so it passes the private-address gate); the name localhost is
  // covered by no rule, so it is asked about.
  json policy{{"rules", json::array({allow("127.0.0.1", port, "upstream-address")})}, {"unmatched", "ask"}, {"defaultAllow", false}};
  HttpsSandbox sb = create_sandbox(w, *upstream, network_request(policy, json::array()));
  const std::string curl = "curl -sS --cacert /tmp/upstream-ca.pem https://localhost:" + p;
  std::size_t asked = editor.asked.size();
  const std::string asking_http = "no rule covers http localhost:" + p + "; asking; ";
  const std::string asking_https = "no rule covers https localhost:" + p + "; asking; ";

  // A client that did not declare approvals is never asked; the guest's client reads why.
  editor.declared = false;
  std::string undeclared = guest(w, sb.id, "curl -sS http://localhost:" + p + "/undeclared");
  CHECK(undeclared == "lockroom: localhost:" + p + " is not allowed by this sandbox's network policy (rule: default): " + asking_http +
                          "not asked: the editor did not declare network approvals at initialize; denied\n");
  CHECK(editor.asked.size() == asked);
  editor.declared = true;

  // Deny: the question names the sandbox, host, port and scheme; the CONNECT is refused, and
  // curl -v shows who refused it.
  editor.script = {"deny"};
  std::string denied = guest(w, sb.id, curl + "/deny -v; echo rc=$?");
  INFO(denied);
  CHECK(has(denied, "CONNECT tunnel failed, response 403"));
  CHECK(has(denied, "< X-Lockroom-Rule: user"));
  CHECK(has(denied, "< X-Lockroom-Reason: the user answered deny"));
  REQUIRE(editor.asked.size() == asked + 1);
  const json& question = editor.asked.back();
  CHECK(question["sandboxId"] == sb.id);
  CHECK(question["host"] == "localhost");
  CHECK(question["port"] == port);
  CHECK(question["scheme"] == "https");
  CHECK(question["options"] == json::array({"allowOnce", "allowSandbox", "allowHost", "deny"}));

  // No answer: the connection is held until the editor call times out, then denied.
  editor.script = {"silent"};
  auto started = std::chrono::steady_clock::now();
  std::string silent = guest(w, sb.id, curl + "/silent; echo rc=$?");
  auto waited = std::chrono::steady_clock::now() - started;
  CHECK(has(silent, "CONNECT tunnel failed, response 403"));
  CHECK(waited >= editor.timeout);
  CHECK(editor.asked.size() == asked + 2);
  CHECK(editor.cancelled.size() == 1);

  // Answers that are no decision: an error, and a decision that is none of the three.
  editor.script = {"error", "maybe"};
  CHECK(has(guest(w, sb.id, curl + "/error; echo rc=$?"), "CONNECT tunnel failed, response 403"));
  CHECK(has(guest(w, sb.id, curl + "/maybe; echo rc=$?"), "CONNECT tunnel failed, response 403"));
  CHECK(editor.asked.size() == asked + 4);

  // Allow once: this connection only; the next one is asked again (and allowed for the sandbox),
  // after which the host is allowed without asking.
  editor.script = {"allowOnce", "allowSandbox"};
  CHECK(guest(w, sb.id, curl + "/once") == kRefs);
  CHECK(has(upstream->last_request(), "GET /once "));
  CHECK(guest(w, sb.id, curl + "/sandbox") == kRefs);
  CHECK(guest(w, sb.id, curl + "/again") == kRefs);
  CHECK(has(upstream->last_request(), "GET /again "));
  CHECK(editor.asked.size() == asked + 6);
  CHECK(editor.script.empty());
  auto network = w.manager->network(sb.id);
  REQUIRE(network.ok());
  const auto& rules = (*network)->policy().rules;
  REQUIRE_FALSE(rules.empty());
  CHECK(rules.front().name == "user");
  CHECK(rules.front().host.text() == "localhost");
  // The allowSandbox answer's rule was told once, with the whole new policy (network/policyChanged).
  std::vector<std::tuple<std::string, egress::Policy, core::PolicyChangeCause>> told;
  for (const auto& change : w.events.policy_changes)
    if (std::get<0>(change) == sb.id) told.push_back(change);
  REQUIRE(told.size() == 1);
  CHECK(std::get<2>(told[0]) == core::PolicyChangeCause::kApproval);
  CHECK(std::get<1>(told[0]).rules.size() == rules.size());
  CHECK(std::get<1>(told[0]).rules.front().name == "user");

  // Each record says what came of the approval: the user's answers under the rule "user", the
  // rest under the policy's own rule with why nobody answered.
  std::vector<std::string> seen;
  for (const auto& record : decisions_match_audit(w, sb))
    seen.push_back(summary(record) + " [" + record.approval + (record.approval_reason.empty() ? "" : " " + record.approval_reason) +
                   "] (" + record.reason + ")");
  INFO(::Catch::Detail::stringify(seen));
  REQUIRE(seen.size() == 8);
  CHECK(seen[0] == "deny http localhost:" + p + " rule=default GET /undeclared [notAsked notDeclared] (" + asking_http +
                       "not asked: the editor did not declare network approvals at initialize; denied)");
  CHECK(seen[1] == "deny https localhost:" + p + " rule=user CONNECT [deny] (the user answered deny)");
  CHECK(seen[2] == "deny https localhost:" + p + " rule=default CONNECT [noAnswer timeout] (" + asking_https +
                       "no answer: the editor did not answer in time (the client did not answer network/approve within 1500 ms); denied)");
  CHECK(seen[3] == "deny https localhost:" + p + " rule=default CONNECT [noAnswer editorError] (" + asking_https +
                       "no answer: the editor answered with an error (-32603 the approval dialog failed); denied)");
  CHECK(seen[4] == "deny https localhost:" + p + " rule=default CONNECT [noAnswer unknownDecision] (" + asking_https +
                       "no answer: the editor's decision is not allowOnce, allowSandbox, allowHost or deny (decision \"maybe\"); denied)");
  CHECK(seen[5] == "allow https localhost:" + p + " rule=user sni=localhost CONNECT [allowOnce] (the user answered allow once)");
  CHECK(seen[6] == "allow https localhost:" + p + " rule=user sni=localhost CONNECT [allowSandbox] (the user answered allow for this sandbox (localhost, port " + p + "))");
  CHECK(seen[7] == "allow https localhost:" + p + " rule=user sni=localhost CONNECT [] (https localhost:" + p +
                       " is allowed by rule user (localhost))");
  w.destroy(sb.id);
  w.close_editor();
}
