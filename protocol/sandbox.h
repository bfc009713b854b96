// Wire types of the sandbox and process methods on the editor face (see protocol/sandboxes.md).
//
// read_* functions turn request params into plain structs, reporting the first bad field through
// the ParamReader; *_json functions build results and notifications. The server's API layer maps
// these to core types; the core never sees them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "protocol/jsonrpc.h"
#include "protocol/params.h"
#include "protocol/signals.h"
#include "protocol/workspace.h"

namespace lockroom::protocol {

struct ResourcesParams {
  std::optional<std::int64_t> cpus, memory_mib, disk_mib, timeout_seconds, max_processes, max_output_bytes;
};

struct SandboxCreateParams {
  ResourcesParams resources;
  std::vector<std::string> kits;
  std::map<std::string, std::string> env;
  std::optional<WorkspaceParams> workspace;
  std::string label;  // the editor's name for it (check_label), "" when not given
};
SandboxCreateParams read_sandbox_create(ParamReader& reader);

// A sandbox's label: at most kMaxLabelBytes of UTF-8 text without control characters.
inline constexpr std::size_t kMaxLabelBytes = 200;
void check_label(ParamReader& reader, const char* field, const std::string& label);

struct SandboxLabelParams {
  std::string sandbox_id;
  std::string label;
};
SandboxLabelParams read_sandbox_set_label(ParamReader& reader);

struct SandboxIdParams {
  std::string sandbox_id;
};
SandboxIdParams read_sandbox_id(ParamReader& reader);

struct PtySize {
  int cols = 80;
  int rows = 24;
};

struct ProcessStartParams {
  std::string sandbox_id;
  std::vector<std::string> argv;
  std::optional<std::string> cwd;
  std::map<std::string, std::string> env;
  std::optional<PtySize> pty;
  std::optional<std::string> user;  // "agent" (the default, uid 1000) or "root"
};
ProcessStartParams read_process_start(ParamReader& reader);

struct ProcessIdParams {
  std::string process_id;
};
ProcessIdParams read_process_id(ParamReader& reader);

struct ProcessWriteParams {
  std::string process_id;
  std::string data;  // already decoded from base64 when `encoding` was "base64"
};
ProcessWriteParams read_process_write(ParamReader& reader);

struct ProcessResizeParams {
  std::string process_id;
  PtySize size;
};
ProcessResizeParams read_process_resize(ParamReader& reader);

struct ProcessSignalParams {
  std::string process_id;
  int signal = 15;  // accepted as a number or a name such as "SIGINT" / "INT"
};
ProcessSignalParams read_process_signal(ParamReader& reader);

struct LimitsWire {
  int cpus, memory_mib, disk_mib, timeout_seconds, max_processes;
  std::uint64_t max_output_bytes;
};
json limits_json(const LimitsWire& limits);

json process_output_json(const std::string& process_id, const std::string& stream, const std::string& data, bool base64);
json process_exited_json(const std::string& process_id, std::optional<int> exit_code, std::optional<int> signal);
// A process as process/list lists it and process/started announces it.
struct ProcessInfoWire {
  std::string process_id;
  std::string sandbox_id;
  std::vector<std::string> argv;
  std::string cwd;
  bool pty = false;
  std::string origin;  // "client", "kitService", "kitSetup"
  std::string name;    // a kit service's name, else ""
  std::int64_t started_unix_ms = 0;
  bool running = true;
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::string reason;  // why lockroom ended it ("outputLimit", "sandboxGone"), else ""
};
json process_info_json(const ProcessInfoWire& info);

json state_changed_json(const std::string& sandbox_id, const std::string& state, const std::string& reason,
                        const std::string& message);

// Base64 (RFC 4648) decoding for data the editor sends; nullopt on malformed input.
std::optional<std::string> base64_decode(const std::string& text);

}  // namespace lockroom::protocol
