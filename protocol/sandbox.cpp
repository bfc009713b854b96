// Sandbox and process wire types; see sandbox.h.
#include "protocol/sandbox.h"

#include "protocol/channel/base64.h"
#include "protocol/signals.h"

#include <utility>

namespace lockroom::protocol {

namespace {

constexpr std::int64_t kMaxArgs = 4096;

PtySize read_size(ParamReader& r) {
  PtySize size;
  size.cols = static_cast<int>(r.integer("cols", true, 1, 1000).value_or(80));
  size.rows = static_cast<int>(r.integer("rows", true, 1, 1000).value_or(24));
  return size;
}

}  // namespace

SandboxCreateParams read_sandbox_create(ParamReader& reader) {
  SandboxCreateParams out;
  if (auto res = reader.object("resources", false)) {
    out.resources.cpus = res->integer("cpus", false);
    out.resources.memory_mib = res->integer("memoryMiB", false);
    out.resources.disk_mib = res->integer("diskMiB", false);
    out.resources.timeout_seconds = res->integer("timeoutSeconds", false);
    out.resources.max_processes = res->integer("maxProcesses", false);
    out.resources.max_output_bytes = res->integer("maxOutputBytes", false);
    reader.merge(*res);
  }
  out.kits = reader.strings("kits", false).value_or(std::vector<std::string>{});
  out.env = reader.string_map("env", false).value_or(std::map<std::string, std::string>{});
  out.workspace = read_workspace(reader, "workspace");
  out.label = reader.string("label", false).value_or("");
  check_label(reader, "label", out.label);
  reader.reject_unknown({"network", "secrets"});  // read by the egress parsers (server/api/network_methods.cpp)
  return out;
}

void check_label(ParamReader& reader, const char* field, const std::string& label) {
  if (!reader.ok()) return;
  if (label.size() > kMaxLabelBytes)
    return reader.fail(field, "is " + std::to_string(label.size()) + " bytes long; at most " + std::to_string(kMaxLabelBytes) + " are accepted");
  for (unsigned char c : label)
    if (c < 0x20 || c == 0x7f) return reader.fail(field, "contains a control character; a label is one line of printable text");
}

SandboxLabelParams read_sandbox_set_label(ParamReader& reader) {
  SandboxLabelParams out;
  out.sandbox_id = reader.string("sandboxId", true).value_or("");
  out.label = reader.string("label", true).value_or("");
  check_label(reader, "label", out.label);
  reader.reject_unknown();
  return out;
}

SandboxIdParams read_sandbox_id(ParamReader& reader) {
  SandboxIdParams out{reader.string("sandboxId", true).value_or("")};
  reader.reject_unknown();
  return out;
}

ProcessStartParams read_process_start(ParamReader& reader) {
  ProcessStartParams out;
  out.sandbox_id = reader.string("sandboxId", true).value_or("");
  out.argv = reader.strings("argv", true).value_or(std::vector<std::string>{});
  if (reader.ok() && out.argv.empty()) reader.fail("argv", "must name a program to run, e.g. [\"sh\", \"-c\", \"make\"]");
  if (reader.ok() && static_cast<std::int64_t>(out.argv.size()) > kMaxArgs)
    reader.fail("argv", "has " + std::to_string(out.argv.size()) + " items; at most " + std::to_string(kMaxArgs) + " are accepted");
  out.cwd = reader.string("cwd", false);
  out.env = reader.string_map("env", false).value_or(std::map<std::string, std::string>{});
  if (auto pty = reader.object("pty", false)) {
    out.pty = read_size(*pty);
    reader.merge(*pty);
  }
  out.user = reader.string("user", false);
  if (out.user && *out.user != "agent" && *out.user != "root")
    reader.fail("user", "must be \"agent\" (the default: an unprivileged user owning /workspace) or \"root\", got \"" + out.user->substr(0, 32) + "\"");
  reader.reject_unknown();
  return out;
}

ProcessIdParams read_process_id(ParamReader& reader) {
  ProcessIdParams out{reader.string("processId", true).value_or("")};
  reader.reject_unknown();
  return out;
}

ProcessWriteParams read_process_write(ParamReader& reader) {
  ProcessWriteParams out;
  out.process_id = reader.string("processId", true).value_or("");
  std::string data = reader.string("data", true).value_or("");
  std::string encoding = reader.string("encoding", false).value_or("utf-8");
  if (!reader.ok()) return out;
  if (encoding == "base64") {
    auto decoded = base64_decode(data);
    if (!decoded) {
      reader.fail("data", "is not valid base64");
      return out;
    }
    out.data = std::move(*decoded);
  } else if (encoding == "utf-8") {
    out.data = std::move(data);
  } else {
    reader.fail("encoding", "must be \"utf-8\" or \"base64\", got \"" + encoding + "\"");
  }
  reader.reject_unknown();
  return out;
}

ProcessResizeParams read_process_resize(ParamReader& reader) {
  ProcessResizeParams out;
  out.process_id = reader.string("processId", true).value_or("");
  out.size = read_size(reader);
  reader.reject_unknown();
  return out;
}

ProcessSignalParams read_process_signal(ParamReader& reader) {
  ProcessSignalParams out;
  out.process_id = reader.string("processId", true).value_or("");
  auto sig = reader.any("signal", true);
  if (!sig) return out;
  if (sig->is_number_integer()) {
    auto n = sig->get<std::int64_t>();
    if (n < 1 || n > 64) reader.fail("signal", "must be a signal number from 1 to 64, got " + std::to_string(n));
    out.signal = static_cast<int>(n);
  } else if (sig->is_string()) {
    auto n = signal_number(sig->get<std::string>());
    if (!n) reader.fail("signal", "names no signal lockroom knows: \"" + sig->get<std::string>() + "\" (try SIGTERM, SIGINT, SIGKILL)");
    else out.signal = *n;
  } else {
    reader.fail("signal", "must be a signal name such as \"SIGTERM\" or a number");
  }
  reader.reject_unknown();
  return out;
}

json limits_json(const LimitsWire& l) {
  return json{{"cpus", l.cpus},
              {"memoryMiB", l.memory_mib},
              {"diskMiB", l.disk_mib},
              {"timeoutSeconds", l.timeout_seconds},
              {"maxProcesses", l.max_processes},
              {"maxOutputBytes", l.max_output_bytes}};
}

json process_output_json(const std::string& process_id, const std::string& stream, const std::string& data, bool base64) {
  json out{{"processId", process_id}, {"stream", stream}, {"data", data}};
  if (base64) out["encoding"] = "base64";
  return out;
}

json process_exited_json(const std::string& process_id, std::optional<int> exit_code, std::optional<int> signal) {
  json out{{"processId", process_id}};
  if (exit_code) out["exitCode"] = *exit_code;
  if (signal) {
    out["signal"] = signal_name(*signal);
    out["signalNumber"] = *signal;
  }
  return out;
}

json process_info_json(const ProcessInfoWire& info) {
  json out{{"processId", info.process_id}, {"sandboxId", info.sandbox_id}, {"argv", info.argv}, {"cwd", info.cwd},
           {"pty", info.pty}, {"origin", info.origin}, {"startedAt", info.started_unix_ms}, {"running", info.running}};
  if (!info.name.empty()) out["name"] = info.name;
  if (!info.running) {
    json exit = json::object();
    if (info.exit_code) exit["exitCode"] = *info.exit_code;
    if (info.signal) {
      exit["signal"] = signal_name(*info.signal);
      exit["signalNumber"] = *info.signal;
    }
    if (!info.reason.empty()) exit["reason"] = info.reason;
    out["exit"] = std::move(exit);
  }
  return out;
}

json state_changed_json(const std::string& sandbox_id, const std::string& state, const std::string& reason,
                        const std::string& message) {
  json out{{"sandboxId", sandbox_id}, {"state", state}};
  if (!reason.empty() && reason != "none") out["reason"] = reason;
  if (!message.empty()) out["message"] = message;
  return out;
}

std::optional<std::string> base64_decode(const std::string& text) { return channel::base64_decode(text); }

}  // namespace lockroom::protocol
