// The agent's control methods: names, typed params and results, and their JSON (protocol/channel.md).
//
// One definition for both ends: the agent parses params and encodes results with these, the
// server encodes params and parses results. Every parse validates types and bounds and returns
// an error naming the field (e.g. "\"argv\" must not be empty"); the agent sends it back as
// -32602, the server treats a bad result as a lying agent. Pure: no I/O.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/channel/session.h"
#include "protocol/jsonrpc.h"
#include "server/common/result.h"

namespace lockroom::protocol::channel {

inline constexpr int kProtocolVersion = 1;

namespace method {
inline constexpr const char* kHello = "hello";
inline constexpr const char* kHealth = "health";
inline constexpr const char* kGuestResume = "guest.resume";
inline constexpr const char* kLimitsSet = "limits.set";
inline constexpr const char* kProcessStart = "process.start";
inline constexpr const char* kProcessResize = "process.resize";
inline constexpr const char* kProcessSignal = "process.signal";
inline constexpr const char* kProcessExited = "process.exited";  // notification, agent → host
inline constexpr const char* kLimitReached = "limit.reached";    // notification, agent → host
inline constexpr const char* kFileRead = "file.read";
inline constexpr const char* kFileWrite = "file.write";
inline constexpr const char* kFileStat = "file.stat";
inline constexpr const char* kFileList = "file.list";
}  // namespace method

// Error codes the agent answers with, besides JSON-RPC's own -32700..-32603.
namespace agent_error {
inline constexpr int kNotReady = -33001;            // a request before hello
inline constexpr int kUnsupportedProtocol = -33002; // hello with a protocol version the agent lacks
inline constexpr int kNotFound = -33010;            // no such path or process (ENOENT, ESRCH)
inline constexpr int kPermissionDenied = -33011;    // EACCES, EPERM
inline constexpr int kWrongType = -33012;           // a directory where a file was expected, or the reverse
inline constexpr int kTooLarge = -33013;            // over an inline bound: use a stream
inline constexpr int kSpawnFailed = -33020;         // fork, chdir or exec failed (data.stage, data.errno)
inline constexpr int kLimitReached = -33021;        // too many processes or streams
inline constexpr int kProcessGone = -33022;         // the process has already exited
inline constexpr int kNotATerminal = -33023;        // resize of a process without a pty
inline constexpr int kIoError = -33030;             // any other failing system call (data.errno)
}  // namespace agent_error

// Bounds shared by both ends.
inline constexpr std::size_t kMaxArgs = 4096;
inline constexpr std::size_t kMaxEnv = 4096;
inline constexpr std::size_t kMaxPath = 4096;
inline constexpr std::size_t kMaxInlineFile = 256u << 10;  // file.read length, file.write data
inline constexpr std::int64_t kDefaultListLimit = 1000;
inline constexpr std::int64_t kMaxListLimit = 10000;
inline constexpr std::size_t kMinEntropy = 32;
inline constexpr std::size_t kMaxEntropy = 4096;
inline constexpr std::int64_t kMaxTerminalSize = 4096;     // cols and rows
inline constexpr std::int64_t kMaxProcessesLimit = 1 << 20;
inline constexpr std::int64_t kMaxDiskMibLimit = 1 << 22;  // 4 TiB
inline constexpr std::size_t kMaxLimitMessage = 512;       // limit.reached's message, in bytes

// ---- hello
struct HelloParams {
  int protocol = kProtocolVersion;
  std::string host_version;
  Settings settings;
};
struct HelloResult {
  int protocol = kProtocolVersion;
  std::string agent_version;
  Settings settings;
  std::int64_t pid = 0;
  std::string process_limit;  // how process limits are enforced: "cgroup" or "rlimit"
};

// ---- health
struct HealthResult {
  std::int64_t uptime_ms = 0;
  double load[3] = {0, 0, 0};
  std::int64_t memory_total_kib = 0;
  std::int64_t memory_available_kib = 0;
  std::int64_t processes = 0;  // running processes started through process.start
  std::int64_t streams = 0;
};

// ---- guest.resume
struct ResumeParams {
  std::int64_t unix_time_ns = 0;
  std::string entropy;  // raw bytes (base64 on the wire)
};
struct ResumeResult {
  bool clock_set = false;
  std::int64_t entropy_bytes = 0;
  bool reseeded = false;
};

// ---- limits.set, limit.reached
struct LimitsParams {
  std::optional<std::int64_t> max_processes;
  std::optional<std::int64_t> max_disk_mib = std::nullopt;  // room for the guest's files, on top of the image's own
};
struct LimitsResult {
  std::optional<std::int64_t> max_processes;
  std::string enforcement;  // "cgroup" or "rlimit"
  std::optional<std::int64_t> max_disk_mib = std::nullopt;
  std::string disk_enforcement = "none";  // "tmpfs" (the guest's files are in one sized tmpfs) or "none"
};
// What the agent watches and reports, once per episode, with limit.reached.
enum class GuestLimit { kDisk, kProcesses, kMemory };
struct LimitReached {
  GuestLimit limit = GuestLimit::kDisk;
  std::string message;               // for people; at most kMaxLimitMessage bytes
  std::optional<std::int64_t> pid;   // the process.start whose processes met the limit, when known
  std::optional<std::int64_t> value; // the limit in force: MiB (disk, memory) or processes
};
const char* guest_limit_name(GuestLimit limit);  // "disk", "processes", "memory"

// ---- process.*
struct TerminalSize {
  std::int64_t cols = 80;
  std::int64_t rows = 24;
};
struct ProcessStartParams {
  std::vector<std::string> argv;
  std::optional<std::string> cwd;
  std::vector<std::pair<std::string, std::optional<std::string>>> env;  // null: unset
  std::optional<TerminalSize> pty;
  std::optional<std::int64_t> max_processes;
  std::optional<std::string> user;  // "root", or absent for the unprivileged default user ("agent")
};
// Pipes use stdin/stdout/stderr; a pty uses `pty` alone (0 for the unused ones).
struct ProcessStreams {
  std::uint32_t stdin_stream = 0;
  std::uint32_t stdout_stream = 0;
  std::uint32_t stderr_stream = 0;
  std::uint32_t pty_stream = 0;
};
struct ProcessStartResult {
  std::int64_t pid = 0;
  ProcessStreams streams;
};
struct ProcessResizeParams {
  std::int64_t pid = 0;
  TerminalSize size;
};
struct ProcessSignalParams {
  std::int64_t pid = 0;
  int signal = 0;
  bool group = true;  // to the process group (every process.start makes its own)
};
struct ProcessExited {
  std::int64_t pid = 0;
  std::optional<int> exit_code;
  std::optional<int> signal;
  bool core_dumped = false;
};

// ---- file.*
struct FileReadParams {
  std::string path;
  std::int64_t offset = 0;
  std::int64_t length = static_cast<std::int64_t>(kMaxInlineFile);
  bool stream = false;  // send the whole file on a new stream instead of inline
};
struct FileReadResult {
  std::string data;  // raw bytes (inline reads)
  std::int64_t size = 0;  // the file's size
  bool eof = false;
  std::uint32_t stream = 0;  // streamed reads
};
struct FileWriteParams {
  std::string path;
  std::string data;  // raw bytes (inline writes)
  std::int64_t mode = 0644;
  bool append = false;
  bool mkdirs = false;
  bool stream = false;  // the agent opens a stream; the host sends the content and closes it
  std::optional<std::string> user;  // who creates it: "root", or absent for the default user ("agent")
};
struct FileWriteResult {
  std::int64_t written = 0;
  std::uint32_t stream = 0;
};
struct FileStatParams {
  std::string path;
  bool follow = false;
};
struct FileStat {
  std::string type;  // "file", "dir", "symlink" or "other"
  std::int64_t size = 0;
  std::int64_t mode = 0;  // permission bits (07777)
  std::int64_t mtime_ns = 0;
  std::optional<std::string> target;  // symlinks
};
struct FileListParams {
  std::string path;
  std::int64_t limit = kDefaultListLimit;
};
struct DirEntry {
  std::string name;
  std::string type;
  std::int64_t size = 0;
  std::int64_t mode = 0;
};
struct FileListResult {
  std::vector<DirEntry> entries;  // sorted by name
  bool truncated = false;
};

// JSON both ways. to_json never fails; parse_* validates.
json to_json(const HelloParams& v);
json to_json(const HelloResult& v);
json to_json(const HealthResult& v);
json to_json(const ResumeParams& v);
json to_json(const ResumeResult& v);
json to_json(const LimitsParams& v);
json to_json(const LimitsResult& v);
json to_json(const LimitReached& v);
json to_json(const ProcessStartParams& v);
json to_json(const ProcessStartResult& v);
json to_json(const ProcessResizeParams& v);
json to_json(const ProcessSignalParams& v);
json to_json(const ProcessExited& v);
json to_json(const FileReadParams& v);
json to_json(const FileReadResult& v);
json to_json(const FileWriteParams& v);
json to_json(const FileWriteResult& v);
json to_json(const FileStatParams& v);
json to_json(const FileStat& v);
json to_json(const FileListParams& v);
json to_json(const FileListResult& v);

Result<HelloParams> parse_hello_params(const json& j);
Result<HelloResult> parse_hello_result(const json& j);
Result<HealthResult> parse_health_result(const json& j);
Result<ResumeParams> parse_resume_params(const json& j);
Result<ResumeResult> parse_resume_result(const json& j);
Result<LimitsParams> parse_limits_params(const json& j);
Result<LimitsResult> parse_limits_result(const json& j);
// Checks the notification as hostile input: a known limit, a bounded message, a positive pid.
Result<LimitReached> parse_limit_reached(const json& j);
Result<ProcessStartParams> parse_process_start_params(const json& j);
Result<ProcessStartResult> parse_process_start_result(const json& j, bool pty);
Result<ProcessResizeParams> parse_process_resize_params(const json& j);
Result<ProcessSignalParams> parse_process_signal_params(const json& j);
Result<ProcessExited> parse_process_exited(const json& j);
Result<FileReadParams> parse_file_read_params(const json& j);
Result<FileReadResult> parse_file_read_result(const json& j, bool streamed);
Result<FileWriteParams> parse_file_write_params(const json& j);
Result<FileWriteResult> parse_file_write_result(const json& j, bool streamed);
Result<FileStatParams> parse_file_stat_params(const json& j);
Result<FileStat> parse_file_stat(const json& j);
Result<FileListParams> parse_file_list_params(const json& j);
Result<FileListResult> parse_file_list_result(const json& j);

// Signals by number or by name ("TERM", "SIGTERM"); null when unknown.
std::optional<int> signal_from_name(const std::string& name);
std::string signal_name(int signal);  // "TERM", or the number as text

}  // namespace lockroom::protocol::channel

// The workspace and network parts, in their own headers (each includes this one first).
#include "protocol/channel/messages_workspace.h"  // IWYU pragma: export
#include "protocol/channel/messages_net.h"        // IWYU pragma: export
