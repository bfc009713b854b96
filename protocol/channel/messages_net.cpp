// JSON of net.enable, net.trust, net.accept, net.refuse and the net.connection notification;
// see messages.h and protocol/channel.md ("Network").
#include "protocol/channel/message_util.h"
#include "protocol/channel/messages.h"

namespace lockroom::protocol::channel {

using detail::check_text;
using detail::finish;

namespace {

constexpr std::int64_t kMaxStreamId = 0xffffffffLL;

std::uint32_t read_stream(ParamReader& r) {
  auto id = r.integer("stream", true, 1, kMaxStreamId).value_or(0);
  return static_cast<std::uint32_t>(id);
}

// A host name as a SOCKS client may send it: printable ASCII without spaces, 1..255 bytes.
void check_host(ParamReader& r, const char* field, const std::string& host) {
  if (host.empty()) return r.fail(field, "must not be empty");
  if (host.size() > kMaxTargetHost) return r.fail(field, "is " + std::to_string(host.size()) + " bytes long; the limit is " + std::to_string(kMaxTargetHost));
  for (unsigned char c : host)
    if (c <= 0x20 || c >= 0x7f) return r.fail(field, "contains a byte that no host name has (0x" + std::to_string(c) + ")");
}

void put_optional(json& j, const char* field, const std::optional<std::int64_t>& v) {
  if (v) j[field] = *v;
}

}  // namespace

const char* net_kind_name(NetKind kind) { return kind == NetKind::kSocks ? "socks" : "http"; }

json to_json(const NetEnableParams& v) {
  json j = json::object();
  put_optional(j, "http", v.http);
  put_optional(j, "socks", v.socks);
  put_optional(j, "maxConnections", v.max_connections);
  return j;
}

Result<NetEnableParams> parse_net_enable_params(const json& j) {
  ParamReader r(j);
  NetEnableParams v;
  v.http = r.integer("http", false, 0, kMaxPort);
  v.socks = r.integer("socks", false, 0, kMaxPort);
  v.max_connections = r.integer("maxConnections", false, 1, kMaxNetConnections);
  return finish(r, std::move(v));
}

json to_json(const NetEnableResult& v) {
  return json{{"http", v.http}, {"socks", v.socks}, {"dns", v.dns}, {"maxConnections", v.max_connections}};
}

Result<NetEnableResult> parse_net_enable_result(const json& j) {
  ParamReader r(j);
  NetEnableResult v;
  v.http = r.integer("http", true, 1, kMaxPort).value_or(0);
  v.socks = r.integer("socks", true, 1, kMaxPort).value_or(0);
  v.dns = r.integer("dns", true, 0, kMaxPort).value_or(0);
  v.max_connections = r.integer("maxConnections", true, 1, kMaxNetConnections).value_or(0);
  return finish(r, std::move(v));
}

json to_json(const NetConnection& v) {
  json client{{"port", v.client_port}};
  if (v.client_pid) {
    client["pid"] = *v.client_pid;
    client["command"] = v.client_command;
  }
  if (v.client_started) client["started"] = *v.client_started;
  json j{{"stream", v.stream}, {"kind", net_kind_name(v.kind)}, {"client", std::move(client)}};
  if (v.target) j["target"] = json{{"host", v.target->host}, {"port", v.target->port}};
  return j;
}

Result<NetConnection> parse_net_connection(const json& j) {
  ParamReader r(j);
  NetConnection v;
  v.stream = read_stream(r);
  if (r.ok() && v.stream % 2 != 0) r.fail("stream", "must be even: connections are streams the agent opens");
  std::string kind = r.string("kind", true).value_or("");
  if (r.ok() && kind != "http" && kind != "socks") r.fail("kind", "must be \"http\" or \"socks\", got \"" + kind.substr(0, 32) + "\"");
  v.kind = kind == "socks" ? NetKind::kSocks : NetKind::kHttp;
  if (auto target = r.object("target", false)) {
    NetTarget t;
    t.host = target->string("host", true).value_or("");
    if (target->ok()) check_host(*target, "host", t.host);
    t.port = target->integer("port", true, 1, kMaxPort).value_or(0);
    r.merge(*target);
    v.target = std::move(t);
  }
  if (r.ok() && v.kind == NetKind::kSocks && !v.target) r.fail("target", "is required for a socks connection");
  if (r.ok() && v.kind == NetKind::kHttp && v.target) r.fail("target", "is only for socks connections (the host reads an HTTP client's target itself)");
  if (auto client = r.object("client", true)) {
    v.client_port = client->integer("port", true, 0, kMaxPort).value_or(0);
    v.client_pid = client->integer("pid", false, 1, kMaxGuestPid);
    v.client_started = client->integer("started", false, 1, kMaxGuestPid);
    v.client_command = client->string("command", false).value_or("");
    if (client->ok() && v.client_command.size() > kMaxClientCommand)
      client->fail("command", "is " + std::to_string(v.client_command.size()) + " bytes long; the limit is " + std::to_string(kMaxClientCommand));
    if (client->ok())
      for (unsigned char c : v.client_command)
        if (c < 0x20 || c >= 0x7f) {
          client->fail("command", "contains a byte outside printable ASCII (0x" + std::to_string(c) + "); the agent replaces those");
          break;
        }
    if (client->ok() && !v.client_command.empty() && !v.client_pid) client->fail("command", "comes only with a pid");
    r.merge(*client);
  }
  return finish(r, std::move(v));
}

json to_json(const NetAcceptParams& v) { return json{{"stream", v.stream}}; }

Result<NetAcceptParams> parse_net_accept_params(const json& j) {
  ParamReader r(j);
  NetAcceptParams v;
  v.stream = read_stream(r);
  return finish(r, std::move(v));
}

json to_json(const NetRefuseParams& v) { return json{{"stream", v.stream}, {"reason", v.reason}, {"socksCode", v.socks_code}}; }

Result<NetRefuseParams> parse_net_refuse_params(const json& j) {
  ParamReader r(j);
  NetRefuseParams v;
  v.stream = read_stream(r);
  v.reason = r.string("reason", false).value_or("");
  if (r.ok()) check_text(r, "reason", v.reason, kMaxRefuseReason, false);
  v.socks_code = static_cast<std::uint8_t>(
      r.integer("socksCode", false, socks_reply::kGeneralFailure, socks_reply::kAddressTypeNotSupported).value_or(socks_reply::kNotAllowed));
  return finish(r, std::move(v));
}

json to_json(const NetTrustParams& v) { return json{{"pem", v.pem}}; }

Result<NetTrustParams> parse_net_trust_params(const json& j) {
  ParamReader r(j);
  NetTrustParams v;
  v.pem = r.string("pem", true).value_or("");
  if (r.ok()) check_text(r, "pem", v.pem, kMaxCertificatePem, true);
  if (r.ok() && v.pem.find("-----BEGIN CERTIFICATE-----") == std::string::npos)
    r.fail("pem", "holds no \"-----BEGIN CERTIFICATE-----\" block: send the CA certificate in PEM form (never its key)");
  if (r.ok() && v.pem.find("PRIVATE KEY") != std::string::npos)
    r.fail("pem", "contains a private key: only the CA certificate may enter the guest");
  return finish(r, std::move(v));
}

json to_json(const NetTrustResult& v) { return json{{"certificate", v.certificate}, {"bundle", v.bundle}}; }

Result<NetTrustResult> parse_net_trust_result(const json& j) {
  ParamReader r(j);
  NetTrustResult v;
  v.certificate = r.string("certificate", true).value_or("");
  if (r.ok()) check_text(r, "certificate", v.certificate, kMaxPath, true);
  v.bundle = r.string("bundle", true).value_or("");
  if (r.ok()) check_text(r, "bundle", v.bundle, kMaxPath, true);
  return finish(r, std::move(v));
}

}  // namespace lockroom::protocol::channel
