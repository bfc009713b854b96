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

namespace lockroom::protocol::channel {

// ---- workspace.* (protocol/channel.md, "Workspace"; JSON and record codecs in messages_workspace.cpp)
//
// import/checkout bring a git pack into the guest's workspace and check a commit out; manifest
// lists the workspace as git would add it ({path, mode, blob id, size} records); export sends
// the bytes of chosen manifest entries. Manifest and export bodies are binary records
// (big-endian), validated here against bounds the host declares: the guest is hostile.
namespace method {
inline constexpr const char* kWorkspaceImport = "workspace.import";
inline constexpr const char* kWorkspaceCheckout = "workspace.checkout";
inline constexpr const char* kWorkspaceManifest = "workspace.manifest";
inline constexpr const char* kWorkspaceExport = "workspace.export";
}  // namespace method

namespace agent_error {
inline constexpr int kWorkspaceConflict = -33040;  // local edits in the guest conflict with a sync (data.files)
inline constexpr int kNotARepository = -33041;     // the workspace has no .git: import first
}  // namespace agent_error

inline constexpr const char* kDefaultWorkspace = "/workspace";
inline constexpr const char* kDefaultBranch = "main";
inline constexpr std::int64_t kMaxPackBytes = 8LL << 30;           // the most any import may declare
inline constexpr std::int64_t kMaxManifestEntries = 1 << 21;       // the most any manifest may declare
inline constexpr std::int64_t kMaxWorkspaceFile = 4LL << 30;       // the largest single file either side accepts
inline constexpr std::int64_t kMaxWorkspaceBytes = 1LL << 40;      // the largest total either side accepts
inline constexpr std::size_t kMaxInlineManifest = 64u << 10;       // manifest bodies up to this go inline
inline constexpr std::size_t kMaxConflictFiles = 100;              // files named in a conflict error
inline constexpr std::size_t kMaxExportEntries = 50000;            // entries per workspace.export request
inline constexpr std::uint32_t kModeFile = 0100644;
inline constexpr std::uint32_t kModeExecutable = 0100755;
inline constexpr std::uint32_t kModeSymlink = 0120000;

// One file of the guest's workspace as git would add it. `id` is the git blob id (40 lowercase
// hex): SHA-1 of "blob <size>\0<content>"; a symlink's content is its target.
struct ManifestEntry {
  std::string path;  // relative, '/'-separated, raw bytes (not necessarily UTF-8)
  std::uint32_t mode = kModeFile;
  std::string id;
  std::uint64_t size = 0;
};

// What the host accepts in a manifest or an export; sent with the request so the agent refuses
// with a clear error instead of sending more. An agent that sends more anyway fails the channel.
struct WorkspaceBounds {
  std::int64_t max_entries = 100000;
  std::int64_t max_file_bytes = 256LL << 20;
  std::int64_t max_total_bytes = 2LL << 30;
};

struct WorkspaceImportParams {
  std::string path = kDefaultWorkspace;
  std::int64_t size = 0;  // the pack's exact size in bytes
};
struct WorkspaceImportResult {
  std::uint32_t stream = 0;  // the host sends the pack here and CLOSEs
  bool created = false;      // the workspace repository was made by this import (git init)
};

struct WorkspaceCheckoutParams {
  std::string path = kDefaultWorkspace;
  std::string commit;                // 40 hex
  std::optional<std::string> base;   // sync: the commit the guest's worktree was checked out from
  std::string branch = kDefaultBranch;
};
struct WorkspaceCheckoutResult {
  std::string commit;
  std::string branch;
  bool branch_moved = false;  // false when the agent had moved the branch away from `base` itself
  std::int64_t files = 0;     // entries in the index afterwards
};

struct WorkspaceManifestParams {
  std::string path = kDefaultWorkspace;
  WorkspaceBounds bounds;
  // The manifest the host holds in full (its id). The agent may then answer with only what
  // changed since it; an unknown or stale id gets a full manifest.
  std::optional<std::int64_t> since;
};
struct WorkspaceManifestResult {
  std::int64_t manifest = 0;   // the agent's id for this listing (workspace.export refers to it)
  std::int64_t entries = 0;
  std::int64_t bytes = 0;      // sum of the entries' sizes
  std::int64_t hashed = 0;     // files read and hashed for this manifest
  std::int64_t cached = 0;     // files whose id came from the stat cache
  std::int64_t skipped = 0;    // listed by git but neither a regular file nor a symlink now
  std::int64_t body = 0;       // bytes of encoded records
  std::string data;            // the records, when inline (body <= kMaxInlineManifest)
  std::uint32_t stream = 0;    // otherwise the stream that carries them
  // Present: a partial manifest, only the paths that changed since manifest `since` (each new or
  // changed entry, or a removal record: mode 0, zero id, size 0). `entries`, `bytes`, `hashed`
  // and `cached` then count the records sent, and `since` equals the params' `since`.
  std::optional<std::int64_t> since;
};

// The mode of a removal record in a partial manifest.
inline constexpr std::uint32_t kModeRemoved = 0;

struct WorkspaceExportParams {
  std::string path = kDefaultWorkspace;
  std::int64_t manifest = 0;           // from workspace.manifest
  std::vector<std::int64_t> entries;   // indexes into that manifest, in the order wanted
  WorkspaceBounds bounds;              // max_file_bytes and max_total_bytes apply
};
struct WorkspaceExportResult {
  std::uint32_t stream = 0;
  std::int64_t count = 0;
};

json to_json(const WorkspaceImportParams& v);
json to_json(const WorkspaceImportResult& v);
json to_json(const WorkspaceCheckoutParams& v);
json to_json(const WorkspaceCheckoutResult& v);
json to_json(const WorkspaceManifestParams& v);
json to_json(const WorkspaceManifestResult& v);
json to_json(const WorkspaceExportParams& v);
json to_json(const WorkspaceExportResult& v);

Result<WorkspaceImportParams> parse_workspace_import_params(const json& j);
Result<WorkspaceImportResult> parse_workspace_import_result(const json& j);
Result<WorkspaceCheckoutParams> parse_workspace_checkout_params(const json& j);
Result<WorkspaceCheckoutResult> parse_workspace_checkout_result(const json& j);
Result<WorkspaceManifestParams> parse_workspace_manifest_params(const json& j);
// `bounds` are what the host asked for: a result announcing more is a lie.
Result<WorkspaceManifestResult> parse_workspace_manifest_result(const json& j, const WorkspaceBounds& bounds);
Result<WorkspaceExportParams> parse_workspace_export_params(const json& j);
Result<WorkspaceExportResult> parse_workspace_export_result(const json& j, std::int64_t requested);

// 40 lowercase hex digits <-> 20 raw bytes.
bool is_object_id(std::string_view hex);
std::string id_to_hex(std::string_view raw20);

// A manifest record: u32 mode, 20-byte raw id, u64 size, u16 path length, path bytes.
void append_manifest_record(std::string& out, const ManifestEntry& entry);
// Whether a path from the guest may name a workspace file: relative, no empty, "." or ".."
// component, no ".git" component (any case), no NUL, at most kMaxPath bytes. Empty when fine.
std::string workspace_path_problem(std::string_view path);

// Reads manifest records as they arrive, checking every bound: exactly `announced` records,
// paths valid and strictly increasing (byte order, as git sorts them), known modes, sizes within
// bounds and adding up to the announced byte total. Removal records (mode 0, zero id, size 0) are
// accepted only when the result announced a partial manifest (`since`).
class ManifestDecoder {
 public:
  ManifestDecoder(const WorkspaceManifestResult& announced, const WorkspaceBounds& bounds);
  Result<void> feed(std::string_view bytes);
  // The stream ended: everything announced must have arrived, and nothing more.
  Result<std::vector<ManifestEntry>> finish();

 private:
  Result<void> record(std::string_view bytes);

  std::int64_t announced_entries_;
  std::int64_t announced_bytes_;
  std::int64_t announced_body_;
  WorkspaceBounds bounds_;
  bool partial_ = false;
  std::string pending_;
  std::int64_t received_ = 0;
  std::int64_t total_size_ = 0;
  std::vector<ManifestEntry> entries_;
  std::optional<Error> error_;
};

// An export record: u32 entry (manifest index), u32 mode (0: the file is gone), u64 size, then
// `size` bytes, then the 20-byte raw blob id of those bytes as the agent computed it.
inline constexpr std::size_t kExportHeaderBytes = 16;
inline constexpr std::size_t kExportTrailerBytes = 20;
void append_export_header(std::string& out, std::uint32_t entry, std::uint32_t mode, std::uint64_t size);

// Splits an export stream into records, checking that they come in the requested order and stay
// within bounds. Bytes of a file are passed on as they arrive (never held here).
class ExportDecoder {
 public:
  struct Sink {
    std::function<void(std::int64_t entry, std::uint32_t mode, std::uint64_t size)> on_header;
    std::function<void(std::string_view bytes)> on_body;
    std::function<Result<void>(const std::string& id_hex)> on_trailer;  // an error fails the stream
  };
  ExportDecoder(std::vector<std::int64_t> requested, const WorkspaceBounds& bounds, Sink sink);
  Result<void> feed(std::string_view bytes);
  Result<void> finish() const;  // every requested record arrived, none cut short
  std::size_t records() const { return next_; }

 private:
  std::vector<std::int64_t> requested_;
  WorkspaceBounds bounds_;
  Sink sink_;
  std::size_t next_ = 0;
  enum class Part { kHeader, kBody, kTrailer } part_ = Part::kHeader;
  std::string pending_;
  std::uint64_t body_left_ = 0;
  std::int64_t total_ = 0;
  std::optional<Error> error_;
};

}  // namespace lockroom::protocol::channel

namespace lockroom::protocol::channel {

// ---- net.* (protocol/channel.md, "Network"; JSON in messages_net.cpp)
//
// The guest has no network interface. After net.enable the agent listens on loopback as an HTTP
// proxy and a SOCKS5 proxy; each accepted TCP connection becomes an agent-opened stream announced
// by the notification net.connection. The host decides: HTTP bytes reach it unparsed (it answers
// the client itself); a SOCKS connection waits for net.accept or net.refuse. net.trust installs
// the host's CA certificate (never its key) for processes started afterwards.
namespace method {
inline constexpr const char* kNetEnable = "net.enable";
inline constexpr const char* kNetTrust = "net.trust";
inline constexpr const char* kNetAccept = "net.accept";
inline constexpr const char* kNetRefuse = "net.refuse";
inline constexpr const char* kNetConnection = "net.connection";  // notification, agent → host
}  // namespace method

inline constexpr std::int64_t kMaxPort = 65535;
inline constexpr std::int64_t kMaxNetConnections = 4096;   // the most either side lets net.enable ask for
inline constexpr std::size_t kMaxTargetHost = 255;          // a DNS name (SOCKS5 carries at most 255 bytes)
inline constexpr std::size_t kMaxCertificatePem = 64u << 10;
inline constexpr std::size_t kMaxRefuseReason = 256;

// SOCKS5 reply codes (RFC 1928 section 6) the host may choose in net.refuse.
namespace socks_reply {
inline constexpr std::uint8_t kSucceeded = 0x00;
inline constexpr std::uint8_t kGeneralFailure = 0x01;
inline constexpr std::uint8_t kNotAllowed = 0x02;          // "connection not allowed by ruleset"
inline constexpr std::uint8_t kNetworkUnreachable = 0x03;
inline constexpr std::uint8_t kHostUnreachable = 0x04;
inline constexpr std::uint8_t kConnectionRefused = 0x05;
inline constexpr std::uint8_t kTtlExpired = 0x06;
inline constexpr std::uint8_t kCommandNotSupported = 0x07;
inline constexpr std::uint8_t kAddressTypeNotSupported = 0x08;
}  // namespace socks_reply

// Ports the agent listens on (all on 127.0.0.1). In params, an absent port keeps the agent's own
// setting (kernel command line or flag); 0 asks for any free port. In the result, the ports bound
// (0 for a listener that is off: only the DNS refuser can be).
struct NetEnableParams {
  std::optional<std::int64_t> http;
  std::optional<std::int64_t> socks;
  std::optional<std::int64_t> max_connections;
};
struct NetEnableResult {
  std::int64_t http = 0;
  std::int64_t socks = 0;
  std::int64_t dns = 0;
  std::int64_t max_connections = 0;
};

struct NetTarget {
  std::string host;  // a DNS name, or an IPv4 / IPv6 address in text form (no brackets)
  std::int64_t port = 0;
};
enum class NetKind { kHttp, kSocks };
struct NetConnection {
  std::uint32_t stream = 0;
  NetKind kind = NetKind::kHttp;
  std::optional<NetTarget> target;  // socks only (required there)
  std::int64_t client_port = 0;     // the guest program's source port
};

struct NetAcceptParams {
  std::uint32_t stream = 0;
};
struct NetRefuseParams {
  std::uint32_t stream = 0;
  std::string reason;
  std::uint8_t socks_code = socks_reply::kNotAllowed;  // 0x01..0x08
};

struct NetTrustParams {
  std::string pem;  // one or more PEM certificates, at most kMaxCertificatePem bytes
};
struct NetTrustResult {
  std::string certificate;  // where the CA certificate was written
  std::string bundle;       // the system bundle plus the CA: what SSL_CERT_FILE and friends name
};

const char* net_kind_name(NetKind kind);

json to_json(const NetEnableParams& v);
json to_json(const NetEnableResult& v);
json to_json(const NetConnection& v);
json to_json(const NetAcceptParams& v);
json to_json(const NetRefuseParams& v);
json to_json(const NetTrustParams& v);
json to_json(const NetTrustResult& v);

Result<NetEnableParams> parse_net_enable_params(const json& j);
Result<NetEnableResult> parse_net_enable_result(const json& j);
// Checks the announcement as hostile input: an even stream id, a known kind, a target exactly
// for socks with a host of printable characters and a port in 1..65535.
Result<NetConnection> parse_net_connection(const json& j);
Result<NetAcceptParams> parse_net_accept_params(const json& j);
Result<NetRefuseParams> parse_net_refuse_params(const json& j);
Result<NetTrustParams> parse_net_trust_params(const json& j);
Result<NetTrustResult> parse_net_trust_result(const json& j);

}  // namespace lockroom::protocol::channel
