// The on-disk record of live sandboxes, for `lockroom ps` and `lockroom kill` from another
// process.
//
// Each running sandbox's VM state dir (`<state>/vms/<owner pid>-<seq>-sandbox`, mode 0700) holds
// `sandbox.json`: its id, the owning lockroom's pid, QEMU's pid, when it was created, its limits.
// `lockroom ps` lists the records whose owner still runs; `lockroom kill ID` leaves a
// kill-request marker in that dir (vm::kill_request_path) and kills the QEMU whose command line
// points into it (and nothing else); the owner, seeing its VM exit, reports the sandbox `killed`. The dir, and
// with it the record, goes when the sandbox ends. Once the owner serves the sandbox's control
// socket (server/api/control_socket.h; `lockroom diff` / `lockroom apply`), the record names it.
// Parsing and selection are pure; the rest is plain file and /proc access (CLI thread or loop
// thread; files are tiny).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "server/common/result.h"
#include "server/core/resources.h"

namespace lockroom::core {

struct SandboxRecord {
  std::string id;
  int owner_pid = 0;
  int qemu_pid = 0;
  std::int64_t created_unix_ms = 0;
  std::string accel;
  Resources limits;
  std::filesystem::path control_socket;  // the owner's control socket for this sandbox; empty: none
  std::filesystem::path state_dir;       // filled in when read, not stored
};

std::string record_to_json(const SandboxRecord& record);
// Nothing for a record that does not parse (a half-written or foreign file).
std::optional<SandboxRecord> record_from_json(const std::string& text);

// Writes `<state_dir>/sandbox.json` (0600) atomically.
Result<void> write_sandbox_record(const SandboxRecord& record);

// Every readable record under `<state_root>/vms`, sorted by creation time.
std::vector<SandboxRecord> read_sandbox_records(const std::filesystem::path& state_root);

// The record of sandbox `id` owned by process `owner_pid` (this process, for an owner).
Result<SandboxRecord> find_own_record(const std::filesystem::path& state_root, const std::string& id, int owner_pid);

// The record whose id is `id`, or whose id starts with `id` when that prefix is unambiguous.
Result<SandboxRecord> find_sandbox_record(const std::vector<SandboxRecord>& records, const std::string& id);

// Marks the sandbox as killed by `requester_pid` and kills its QEMU (SIGKILL), after checking
// that the pid's command line names the record's state dir. kNotFound when it is already gone.
Result<void> kill_sandbox(const SandboxRecord& record, int requester_pid);

}  // namespace lockroom::core
