// The egress audit log: one JSON line per decision, appended to a per-sandbox file.
//
//   {"time":"2026-11-30T09:41:40.123Z","sandbox":"sb-1","host":"api.github.com","port":443,
//    "scheme":"https","method":"GET","path":"/user","sni":"api.github.com",
//    "address":"140.82.112.6","decision":"allow","rule":"github","reason":"...",
//    "bytesUp":312,"bytesDown":2048,"durationMs":85,"upstreamStatus":200,"secrets":["github_token"]}
//
// method/path are for HTTP requests, sni for TLS; fields without a value are left out. Each
// record also names the guest connection ("connectionId", a number unique within the sandbox;
// "request", the request's 1-based number on it, for HTTP), the approval that decided it
// ("approvalId") and the guest program that opened it when the agent could tell ("process":
// {"pid", "command"}; informative only, the guest may lie). "phase" ("open", "progress", "close")
// is for network/event only: the log holds one record per decision, the "close" one. Secrets
// appear by name only. As a second guard the log is given the values of the sandbox's secrets
// and replaces any that turns up in a field with "[secret]" before writing, so a value that
// slipped into a path or a reason never reaches the disk.
//
// AuditLog does blocking appends of one line with a single write(2) to a file opened with
// O_APPEND and mode 0600 (the directory is the caller's). Small local writes: acceptable on the
// loop thread; not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "server/common/result.h"
#include "server/egress/policy/json_fields.h"

namespace lockroom::egress {

// The guest program behind a connection, as the guest's agent reported it: never trusted, only shown.
struct GuestProcess {
  std::int64_t pid = 0;
  std::string command;     // its command line, clipped by the agent (and checked by the host)
  std::string process_id;  // lockroom's process id when the program descends from one lockroom started
  friend bool operator==(const GuestProcess&, const GuestProcess&) = default;
};

struct AuditRecord {
  std::chrono::system_clock::time_point time;  // kept to the millisecond
  std::string sandbox;
  std::string host;
  std::uint16_t port = 0;
  std::string scheme;    // "http", "https", "tcp"
  std::string method;    // HTTP only
  std::string path;      // HTTP only: the origin-form target as the guest sent it
  std::string sni;       // TLS only
  std::string address;   // the resolved address connected to, if any
  std::string decision;  // "allow", "deny" or "block" (a sentinel sent outside its scope)
  std::string rule;      // the rule that decided, "default", or "user" after an approval
  std::string reason;
  // When the user was to be asked: "allowOnce", "allowSandbox", "deny" (the user's answers),
  // "notAsked" or "noAnswer"; and for the last two why: "notDeclared", "sandboxGone",
  // "timeout", "editorError", "unknownDecision". Empty when no approval was involved.
  std::string approval;
  std::string approval_reason;
  std::uint64_t bytes_up = 0;
  std::uint64_t bytes_down = 0;
  std::uint64_t duration_ms = 0;
  std::optional<int> upstream_status;
  std::vector<std::string> secrets;  // names of the secrets injected
  std::uint64_t connection_id = 0;   // the guest connection (Proxy session), unique within the sandbox; 0: none
  std::uint64_t request = 0;         // HTTP: the request's number on its connection (1-based); 0: a tunnel
  std::string approval_id;           // the network/approve that decided it, if one did
  std::optional<GuestProcess> process;
  std::string phase;                 // network/event only: "open", "progress" or "close"; never in the log

  friend bool operator==(const AuditRecord&, const AuditRecord&) = default;
};

// RFC 3339 in UTC with milliseconds: 2026-11-30T09:41:40.123Z.
std::string format_rfc3339_ms(std::chrono::system_clock::time_point time);
Result<std::chrono::system_clock::time_point> parse_rfc3339_ms(std::string_view text);

// `redact`: secret values to replace with "[secret]" wherever they appear in a string field.
json audit_record_to_json(const AuditRecord& record, const std::vector<std::string>& redact = {});
std::string audit_record_to_line(const AuditRecord& record, const std::vector<std::string>& redact = {});  // with '\n'
// Reads a line back (for `lockroom run`'s summary of denied attempts, and tests).
Result<AuditRecord> parse_audit_line(std::string_view line);

class AuditLog {
 public:
  // Creates the file (0600) or opens it for appending; refuses a symlink.
  static Result<AuditLog> open(const std::filesystem::path& path);
  AuditLog(AuditLog&& other) noexcept;
  AuditLog& operator=(AuditLog&& other) noexcept;
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;
  ~AuditLog();

  void set_redacted_values(std::vector<std::string> values) { redact_ = std::move(values); }
  Result<void> append(const AuditRecord& record);
  const std::filesystem::path& path() const { return path_; }

 private:
  AuditLog(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::filesystem::path path_;
  std::vector<std::string> redact_;
};

}  // namespace lockroom::egress
