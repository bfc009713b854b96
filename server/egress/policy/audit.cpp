// Audit records as JSON lines, and the per-sandbox log file; see audit.h.
#include "server/egress/policy/audit.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace lockroom::egress {

namespace {

std::string redacted(std::string text, const std::vector<std::string>& redact) {
  for (const std::string& value : redact) {
    if (value.empty()) continue;
    for (std::size_t at = text.find(value); at != std::string::npos; at = text.find(value, at + 8)) text.replace(at, value.size(), "[secret]");
  }
  return text;
}

}  // namespace

std::string format_rfc3339_ms(std::chrono::system_clock::time_point time) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  int millis = static_cast<int>(ms % 1000);
  if (millis < 0) {
    millis += 1000;
    seconds -= 1;
  }
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[40];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour,
                utc.tm_min, utc.tm_sec, millis);
  return text;
}

Result<std::chrono::system_clock::time_point> parse_rfc3339_ms(std::string_view text) {
  std::tm utc{};
  int millis = 0;
  char z = 0;
  std::string copy(text.substr(0, 40));
  int n = std::sscanf(copy.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3d%c", &utc.tm_year, &utc.tm_mon, &utc.tm_mday, &utc.tm_hour, &utc.tm_min,
                      &utc.tm_sec, &millis, &z);
  if (n != 8 || z != 'Z' || text.size() != 24) {
    return make_error(ErrorCode::kInvalidInput, "\"" + copy + "\" is not a UTC time like 2026-11-30T09:41:40.123Z");
  }
  utc.tm_year -= 1900;
  utc.tm_mon -= 1;
  std::time_t seconds = timegm(&utc);
  return std::chrono::system_clock::time_point(std::chrono::seconds(seconds) + std::chrono::milliseconds(millis));
}

json audit_record_to_json(const AuditRecord& r, const std::vector<std::string>& redact) {
  auto text = [&](const std::string& value) { return redacted(value, redact); };
  json line = {{"time", format_rfc3339_ms(r.time)}, {"sandbox", text(r.sandbox)}, {"host", text(r.host)}, {"port", r.port},
               {"scheme", text(r.scheme)}};
  if (!r.method.empty()) line["method"] = text(r.method);
  if (!r.path.empty()) line["path"] = text(r.path);
  if (!r.sni.empty()) line["sni"] = text(r.sni);
  if (!r.address.empty()) line["address"] = text(r.address);
  line["decision"] = text(r.decision);
  line["rule"] = text(r.rule);
  if (!r.reason.empty()) line["reason"] = text(r.reason);
  if (!r.approval.empty()) line["approval"] = text(r.approval);
  if (!r.approval_reason.empty()) line["approvalReason"] = text(r.approval_reason);
  line["bytesUp"] = r.bytes_up;
  line["bytesDown"] = r.bytes_down;
  line["durationMs"] = r.duration_ms;
  if (r.upstream_status) line["upstreamStatus"] = *r.upstream_status;
  if (!r.secrets.empty()) {
    json names = json::array();
    for (const std::string& name : r.secrets) names.push_back(text(name));
    line["secrets"] = std::move(names);
  }
  if (r.connection_id) line["connectionId"] = r.connection_id;
  if (r.request) line["request"] = r.request;
  if (!r.approval_id.empty()) line["approvalId"] = text(r.approval_id);
  if (r.process) {
    json process{{"pid", r.process->pid}, {"command", text(r.process->command)}};
    if (!r.process->process_id.empty()) process["processId"] = text(r.process->process_id);
    line["process"] = std::move(process);
  }
  if (!r.phase.empty()) line["phase"] = r.phase;
  return line;
}

std::string audit_record_to_line(const AuditRecord& record, const std::vector<std::string>& redact) {
  // Invalid UTF-8 from the guest (a path, a host) is replaced rather than thrown on.
  return audit_record_to_json(record, redact).dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

Result<AuditRecord> parse_audit_line(std::string_view line) {
  json value = json::parse(line, nullptr, false);
  if (value.is_discarded() || !value.is_object()) return make_error(ErrorCode::kInvalidInput, "audit line is not a JSON object");
  AuditRecord r;
  auto string_field = [&](const char* name, std::string& out, bool required) -> Result<void> {
    auto it = value.find(name);
    if (it == value.end()) {
      if (required) return field_error(std::string("audit.") + name, "is required");
      return {};
    }
    if (!it->is_string()) return type_error(std::string("audit.") + name, "a string", *it);
    out = it->get<std::string>();
    return {};
  };
  auto number_field = [&](const char* name, std::uint64_t& out) -> Result<void> {
    auto it = value.find(name);
    if (it == value.end()) return {};
    if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<std::int64_t>() >= 0)) {
      return type_error(std::string("audit.") + name, "a non-negative integer", *it);
    }
    out = it->get<std::uint64_t>();
    return {};
  };
  std::string time;
  for (auto [name, out, required] : {std::tuple{"time", &time, true}, {"sandbox", &r.sandbox, true}, {"host", &r.host, true},
                                     {"scheme", &r.scheme, true}, {"method", &r.method, false}, {"path", &r.path, false},
                                     {"sni", &r.sni, false}, {"address", &r.address, false}, {"decision", &r.decision, true},
                                     {"rule", &r.rule, true}, {"reason", &r.reason, false},
                                     {"approval", &r.approval, false}, {"approvalReason", &r.approval_reason, false},
                                     {"approvalId", &r.approval_id, false}, {"phase", &r.phase, false}}) {
    Result<void> ok = string_field(name, *out, required);
    if (!ok) return ok.error();
  }
  Result<std::chrono::system_clock::time_point> parsed_time = parse_rfc3339_ms(time);
  if (!parsed_time) return field_error("audit.time", parsed_time.error().message);
  r.time = *parsed_time;
  std::uint64_t port = 0;
  for (auto [name, out] : {std::pair{"port", &port}, {"bytesUp", &r.bytes_up}, {"bytesDown", &r.bytes_down}, {"durationMs", &r.duration_ms},
                            {"connectionId", &r.connection_id}, {"request", &r.request}}) {
    Result<void> ok = number_field(name, *out);
    if (!ok) return ok.error();
  }
  if (port > 65535) return field_error("audit.port", "is out of range");
  r.port = static_cast<std::uint16_t>(port);
  if (auto status = value.find("upstreamStatus"); status != value.end()) {
    if (!status->is_number_integer()) return type_error("audit.upstreamStatus", "an integer", *status);
    r.upstream_status = status->get<int>();
  }
  if (auto secrets = value.find("secrets"); secrets != value.end()) {
    if (!secrets->is_array()) return type_error("audit.secrets", "a list of names", *secrets);
    for (const json& name : *secrets) {
      if (!name.is_string()) return type_error("audit.secrets[]", "a string", name);
      r.secrets.push_back(name.get<std::string>());
    }
  }
  if (auto process = value.find("process"); process != value.end()) {
    if (!process->is_object() || !process->contains("pid") || !(*process)["pid"].is_number_integer() ||
        !process->contains("command") || !(*process)["command"].is_string())
      return type_error("audit.process", "an object {pid, command}", *process);
    GuestProcess p{(*process)["pid"].get<std::int64_t>(), (*process)["command"].get<std::string>(), {}};
    if (auto id = process->find("processId"); id != process->end() && id->is_string()) p.process_id = id->get<std::string>();
    r.process = std::move(p);
  }
  return r;
}

Result<AuditLog> AuditLog::open(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    return make_error(ErrorCode::kUnavailable, "cannot open audit log " + path.string() + ": " + std::strerror(errno));
  }
  struct stat info {};
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return make_error(ErrorCode::kUnavailable, "audit log " + path.string() + " is not a regular file");
  }
  if ((info.st_mode & 0777) != 0600 && fchmod(fd, 0600) != 0) {
    int error = errno;
    ::close(fd);
    return make_error(ErrorCode::kUnavailable, "cannot make audit log " + path.string() + " private (0600): " + std::strerror(error));
  }
  return AuditLog(fd, path);
}

AuditLog::AuditLog(AuditLog&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)), redact_(std::move(other.redact_)) {
  other.fd_ = -1;
}

AuditLog& AuditLog::operator=(AuditLog&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
    path_ = std::move(other.path_);
    redact_ = std::move(other.redact_);
  }
  return *this;
}

AuditLog::~AuditLog() {
  if (fd_ >= 0) ::close(fd_);
}

Result<void> AuditLog::append(const AuditRecord& record) {
  if (fd_ < 0) return make_error(ErrorCode::kWrongState, "audit log is closed");
  std::string line = audit_record_to_line(record, redact_);
  std::size_t written = 0;
  while (written < line.size()) {
    ssize_t n = ::write(fd_, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return make_error(ErrorCode::kUnavailable, "cannot write audit log " + path_.string() + ": " + std::strerror(errno));
    written += static_cast<std::size_t>(n);
  }
  return {};
}

}  // namespace lockroom::egress
