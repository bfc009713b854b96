// Audit records: JSON lines that read back to the same record, RFC 3339 times with
// milliseconds, a 0600 per-sandbox file appended line by line, and no secret values on disk.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "server/egress/policy/audit.h"
#include "tests/support/temp_dir.h"

using namespace lockroom::egress;
using lockroom::testing::TempDir;

namespace {
AuditRecord sample() {
  AuditRecord r;
  r.time = std::chrono::system_clock::time_point(std::chrono::milliseconds(1796031700123));
  r.sandbox = "sb-7";
  r.host = "api.github.com";
  r.port = 443;
  r.scheme = "https";
  r.method = "POST";
  r.path = "/repos/x/y/issues?state=open";
  r.sni = "api.github.com";
  r.address = "140.82.112.6";
  r.decision = "allow";
  r.rule = "github";
  r.reason = "https api.github.com:443 is allowed by rule github (api.github.com)";
  r.bytes_up = 312;
  r.bytes_down = 20480;
  r.duration_ms = 85;
  r.upstream_status = 201;
  r.secrets = {"github_token"};
  return r;
}
std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

TEST_CASE("times are RFC 3339 UTC with milliseconds, and read back") {
  auto t = std::chrono::system_clock::time_point(std::chrono::milliseconds(1796031700123));
  CHECK(format_rfc3339_ms(t) == "2026-11-30T09:41:40.123Z");
  CHECK(format_rfc3339_ms(std::chrono::system_clock::time_point{}) == "1970-01-01T00:00:00.000Z");
  CHECK(*parse_rfc3339_ms("2026-11-30T09:41:40.123Z") == t);
  CHECK_FALSE(parse_rfc3339_ms("2026-11-30T09:41:40Z").ok());
  CHECK_FALSE(parse_rfc3339_ms("2026-11-30T09:41:40.123+01:00").ok());
  auto now = std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now());
  CHECK(*parse_rfc3339_ms(format_rfc3339_ms(now)) == now);
}

TEST_CASE("an audit record is one JSON line that reads back to the same record") {
  AuditRecord r = sample();
  std::string line = audit_record_to_line(r);
  CHECK(line.back() == '\n');
  CHECK(line.find('\n') == line.size() - 1);
  json value = json::parse(line);
  CHECK(value["time"] == "2026-11-30T09:41:40.123Z");
  CHECK(value["upstreamStatus"] == 201);
  CHECK(value["secrets"] == json{"github_token"});
  auto back = parse_audit_line(line);
  REQUIRE(back.ok());
  CHECK(*back == r);

  // A denied CONNECT: no method, path, address, status or secrets.
  AuditRecord denied;
  denied.time = r.time;
  denied.sandbox = "sb-7";
  denied.host = "169.254.169.254";
  denied.port = 80;
  denied.scheme = "tcp";
  denied.decision = "deny";
  denied.rule = "default";
  denied.reason = "address 169.254.169.254 is in 169.254.169.254/32 (link-local: cloud metadata service)";
  json denied_json = audit_record_to_json(denied);
  for (const char* absent : {"method", "path", "sni", "address", "upstreamStatus", "secrets", "approval", "approvalReason"})
    CHECK_FALSE(denied_json.contains(absent));
  CHECK(*parse_audit_line(audit_record_to_line(denied)) == denied);

  // An approval nobody answered: what came of it and why, read back.
  AuditRecord unanswered = denied;
  unanswered.approval = "noAnswer";
  unanswered.approval_reason = "timeout";
  json unanswered_json = audit_record_to_json(unanswered);
  CHECK(unanswered_json["approval"] == "noAnswer");
  CHECK(unanswered_json["approvalReason"] == "timeout");
  CHECK(*parse_audit_line(audit_record_to_line(unanswered)) == unanswered);
  CHECK_FALSE(parse_audit_line(R"({"time":"2026-11-30T09:41:40.123Z","sandbox":"s","host":"h","scheme":"tcp","decision":"deny",)"
                               R"("rule":"default","approval":7})").ok());

  // The connection, its request, the approval that decided it and the guest process read back;
  // absent when unset.
  for (const char* absent : {"connectionId", "request", "approvalId", "process", "phase"}) CHECK_FALSE(denied_json.contains(absent));
  AuditRecord linked = sample();
  linked.connection_id = 17;
  linked.request = 3;
  linked.approval_id = "sb-7-a2";
  linked.process = GuestProcess{412, "curl -sS https://api.github.com/user", "p-9"};
  json linked_json = audit_record_to_json(linked);
  CHECK(linked_json["connectionId"] == 17);
  CHECK(linked_json["request"] == 3);
  CHECK(linked_json["approvalId"] == "sb-7-a2");
  CHECK(linked_json["process"] == json{{"pid", 412}, {"command", "curl -sS https://api.github.com/user"}, {"processId", "p-9"}});
  CHECK(*parse_audit_line(audit_record_to_line(linked)) == linked);
  linked.phase = "progress";  // for events; the proxy never logs one with a phase
  CHECK(audit_record_to_json(linked)["phase"] == "progress");

  // Guest bytes that are not UTF-8 do not break the line.
  AuditRecord odd = sample();
  odd.path = "/\xff\xfe";
  CHECK(parse_audit_line(audit_record_to_line(odd)).ok());
  CHECK_FALSE(parse_audit_line("{\"time\": 1}").ok());
  CHECK_FALSE(parse_audit_line("not json").ok());
}

TEST_CASE("the audit log appends lines to a 0600 file and never writes a secret value") {
  TempDir dir;
  auto path = dir.path() / "audit.jsonl";
  {
    auto log = AuditLog::open(path);
    REQUIRE(log.ok());
    log->set_redacted_values({"ghp_realvalue123", "npm\"quoted\\value"});
    AuditRecord first = sample();
    first.path = "/login?token=ghp_realvalue123&again=ghp_realvalue123";
    first.reason = "saw npm\"quoted\\value in a header";
    REQUIRE(log->append(first).ok());
    REQUIRE(log->append(sample()).ok());
  }
  struct stat info {};
  REQUIRE(stat(path.c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0600);
  std::string content = read_file(path);
  CHECK(content.find("ghp_realvalue123") == std::string::npos);
  CHECK(content.find("quoted") == std::string::npos);
  std::istringstream lines(content);
  std::string line;
  std::vector<AuditRecord> records;
  while (std::getline(lines, line)) records.push_back(*parse_audit_line(line));
  REQUIRE(records.size() == 2);
  CHECK(records[0].path == "/login?token=[secret]&again=[secret]");
  CHECK(records[0].reason == "saw [secret] in a header");
  CHECK(records[1] == sample());

  // Reopening appends; a symlink is refused.
  {
    auto again = AuditLog::open(path);
    REQUIRE(again.ok());
    REQUIRE(again->append(sample()).ok());
  }
  std::size_t count = 0;
  for (char c : read_file(path)) count += c == '\n';
  CHECK(count == 3);
  std::filesystem::create_symlink(path, dir.path() / "link.jsonl");
  CHECK_FALSE(AuditLog::open(dir.path() / "link.jsonl").ok());
  CHECK_FALSE(AuditLog::open(dir.path() / "missing-dir" / "audit.jsonl").ok());
}
