// sandbox.json records in VM state dirs, and `lockroom kill` (see sandbox_registry.h).
#include "server/core/sandbox_registry.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "server/vm/vm.h"

namespace lockroom::core {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kRecordFile = "sandbox.json";

std::string read_small_file(const fs::path& path, std::size_t limit = 64 * 1024) {
  std::ifstream in(path, std::ios::binary);
  std::string text(limit, '\0');
  in.read(text.data(), static_cast<std::streamsize>(limit));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text;
}

Result<void> write_file_atomically(const fs::path& path, const std::string& text) {
  fs::path tmp = path;
  tmp += ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return make_error(ErrorCode::kUnavailable, "cannot write " + tmp.string() + ": " + std::strerror(errno));
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = close(fd) == 0 && ok;
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    unlink(tmp.c_str());
    return make_error(ErrorCode::kUnavailable, "cannot write " + path.string() + ": " + std::strerror(errno));
  }
  return {};
}

// Whether /proc/PID/cmdline mentions `needle` (QEMU's argv names its state dir's files).
bool cmdline_mentions(int pid, const std::string& needle) {
  std::string cmdline = read_small_file("/proc/" + std::to_string(pid) + "/cmdline", 1 << 20);
  std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
  return !needle.empty() && cmdline.find(needle) != std::string::npos;
}

}  // namespace

std::string record_to_json(const SandboxRecord& r) {
  json j = {{"id", r.id},
            {"ownerPid", r.owner_pid},
            {"qemuPid", r.qemu_pid},
            {"createdUnixMs", r.created_unix_ms},
            {"accel", r.accel},
            {"limits",
             {{"cpus", r.limits.cpus},
              {"memoryMiB", r.limits.memory_mib},
              {"diskMiB", r.limits.disk_mib},
              {"timeoutSeconds", r.limits.lifetime_seconds},
              {"maxProcesses", r.limits.max_processes}}}};
  if (!r.control_socket.empty()) j["controlSocket"] = r.control_socket.string();
  return j.dump() + "\n";
}

std::optional<SandboxRecord> record_from_json(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  try {
    SandboxRecord r;
    r.id = j.at("id").get<std::string>();
    r.owner_pid = j.at("ownerPid").get<int>();
    r.qemu_pid = j.at("qemuPid").get<int>();
    r.created_unix_ms = j.at("createdUnixMs").get<std::int64_t>();
    r.accel = j.value("accel", "");
    r.control_socket = j.value("controlSocket", "");
    if (auto l = j.find("limits"); l != j.end() && l->is_object()) {
      r.limits.cpus = l->value("cpus", r.limits.cpus);
      r.limits.memory_mib = l->value("memoryMiB", r.limits.memory_mib);
      r.limits.disk_mib = l->value("diskMiB", r.limits.disk_mib);
      r.limits.lifetime_seconds = l->value("timeoutSeconds", r.limits.lifetime_seconds);
      r.limits.max_processes = l->value("maxProcesses", r.limits.max_processes);
    }
    if (r.id.empty() || r.owner_pid <= 0 || r.qemu_pid <= 0) return std::nullopt;
    return r;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

Result<void> write_sandbox_record(const SandboxRecord& record) {
  return write_file_atomically(record.state_dir / kRecordFile, record_to_json(record));
}

std::vector<SandboxRecord> read_sandbox_records(const fs::path& state_root) {
  std::vector<SandboxRecord> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(vm::vm_state_root(state_root), ec)) {
    fs::path file = entry.path() / kRecordFile;
    if (!fs::is_regular_file(file, ec)) continue;
    auto record = record_from_json(read_small_file(file));
    if (!record) continue;
    record->state_dir = entry.path();
    out.push_back(std::move(*record));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.created_unix_ms < b.created_unix_ms; });
  return out;
}

Result<SandboxRecord> find_own_record(const fs::path& state_root, const std::string& id, int owner_pid) {
  for (auto& r : read_sandbox_records(state_root))
    if (r.id == id && r.owner_pid == owner_pid) return std::move(r);
  return make_error(ErrorCode::kNotFound, "sandbox " + id + " has no record of process " + std::to_string(owner_pid) + " under " +
                                              vm::vm_state_root(state_root).string());
}

Result<SandboxRecord> find_sandbox_record(const std::vector<SandboxRecord>& records, const std::string& id) {
  if (id.empty()) return make_error(ErrorCode::kInvalidInput, "no sandbox id given");
  const SandboxRecord* match = nullptr;
  for (const auto& r : records) {
    if (r.id == id) return r;
    if (r.id.compare(0, id.size(), id) == 0) {
      if (match) return make_error(ErrorCode::kInvalidInput, "'" + id + "' matches more than one sandbox (" + match->id + ", " + r.id + "): give more of the id");
      match = &r;
    }
  }
  if (!match) return make_error(ErrorCode::kNotFound, "no running sandbox '" + id + "' (see `lockroom ps`)");
  return *match;
}

Result<void> kill_sandbox(const SandboxRecord& record, int requester_pid) {
  if (!cmdline_mentions(record.qemu_pid, record.state_dir.string()))
    return make_error(ErrorCode::kNotFound, "sandbox " + record.id + " is no longer running");
  auto marked = write_file_atomically(vm::kill_request_path(record.state_dir), std::to_string(requester_pid) + "\n");
  if (!marked) return marked;
  if (::kill(record.qemu_pid, SIGKILL) != 0) {
    if (errno == ESRCH) return make_error(ErrorCode::kNotFound, "sandbox " + record.id + " is no longer running");
    return make_error(ErrorCode::kUnavailable, "cannot kill sandbox " + record.id + " (QEMU pid " +
                                                  std::to_string(record.qemu_pid) + "): " + std::strerror(errno));
  }
  return {};
}

}  // namespace lockroom::core
