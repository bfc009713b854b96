// JSON of process.start, process.resize, process.signal and process.exited; see messages.h.
#include "protocol/channel/message_util.h"
#include "protocol/channel/messages.h"

namespace lockroom::protocol::channel {

using detail::check_text;
using detail::finish;

namespace {

constexpr std::int64_t kMaxPid = (1LL << 22);  // Linux's PID_MAX_LIMIT
constexpr std::int64_t kMaxStreamId = 0x7fffffffLL;

TerminalSize read_size(ParamReader& r) {
  TerminalSize size;
  size.cols = r.integer("cols", true, 1, kMaxTerminalSize).value_or(80);
  size.rows = r.integer("rows", true, 1, kMaxTerminalSize).value_or(24);
  return size;
}

std::uint32_t read_stream(ParamReader& r, const char* field) {
  return static_cast<std::uint32_t>(r.integer(field, true, 1, kMaxStreamId).value_or(0));
}

}  // namespace

json to_json(const ProcessStartParams& v) {
  json j{{"argv", v.argv}};
  if (v.cwd) j["cwd"] = *v.cwd;
  if (!v.env.empty()) {
    json env = json::object();
    for (const auto& [name, value] : v.env) env[name] = value ? json(*value) : json(nullptr);
    j["env"] = std::move(env);
  }
  if (v.pty) j["pty"] = json{{"cols", v.pty->cols}, {"rows", v.pty->rows}};
  if (v.max_processes) j["limits"] = json{{"maxProcesses", *v.max_processes}};
  if (v.user) j["user"] = *v.user;
  return j;
}

Result<ProcessStartParams> parse_process_start_params(const json& j) {
  ParamReader r(j);
  ProcessStartParams v;
  v.argv = r.strings("argv", true).value_or(std::vector<std::string>{});
  if (r.ok() && v.argv.empty()) r.fail("argv", "must not be empty: it names the program to run");
  if (r.ok() && v.argv.size() > kMaxArgs) r.fail("argv", "has " + std::to_string(v.argv.size()) + " items; the limit is " + std::to_string(kMaxArgs));
  for (std::size_t i = 0; r.ok() && i < v.argv.size(); ++i) {
    std::string field = "argv[" + std::to_string(i) + "]";
    check_text(r, field.c_str(), v.argv[i], 128u << 10, i == 0);
  }
  v.cwd = r.string("cwd", false);
  if (v.cwd) check_text(r, "cwd", *v.cwd, kMaxPath, true);
  if (auto env = r.any("env", false)) {
    if (!env->is_object()) {
      r.fail("env", "must be an object of NAME: value (a string, or null to unset)");
    } else if (env->size() > kMaxEnv) {
      r.fail("env", "has " + std::to_string(env->size()) + " entries; the limit is " + std::to_string(kMaxEnv));
    } else {
      for (auto it = env->begin(); r.ok() && it != env->end(); ++it) {
        std::string field = "env." + it.key();
        if (it.key().empty() || it.key().find('=') != std::string::npos || it.key().find('\0') != std::string::npos) {
          r.fail("env", "has the name \"" + it.key().substr(0, 64) + "\"; names must be non-empty and hold no '=' or NUL");
        } else if (it.value().is_null()) {
          v.env.emplace_back(it.key(), std::nullopt);
        } else if (!it.value().is_string()) {
          r.fail(field.c_str(), "must be a string or null");
        } else {
          v.env.emplace_back(it.key(), it.value().get<std::string>());
          check_text(r, field.c_str(), *v.env.back().second, 128u << 10, false);
        }
      }
    }
  }
  if (auto pty = r.object("pty", false)) {
    v.pty = read_size(*pty);
    r.merge(*pty);
  }
  if (auto limits = r.object("limits", false)) {
    v.max_processes = limits->integer("maxProcesses", false, 1, kMaxProcessesLimit);
    r.merge(*limits);
  }
  v.user = detail::read_user(r);
  return finish(r, std::move(v));
}

json to_json(const ProcessStartResult& v) {
  json streams;
  if (v.streams.pty_stream) {
    streams = json{{"pty", v.streams.pty_stream}};
  } else {
    streams = json{{"stdin", v.streams.stdin_stream}, {"stdout", v.streams.stdout_stream}, {"stderr", v.streams.stderr_stream}};
  }
  return json{{"pid", v.pid}, {"streams", std::move(streams)}};
}

Result<ProcessStartResult> parse_process_start_result(const json& j, bool pty) {
  ParamReader r(j);
  ProcessStartResult v;
  v.pid = r.integer("pid", true, 1, kMaxPid).value_or(0);
  if (auto streams = r.object("streams", true)) {
    if (pty) {
      v.streams.pty_stream = read_stream(*streams, "pty");
    } else {
      v.streams.stdin_stream = read_stream(*streams, "stdin");
      v.streams.stdout_stream = read_stream(*streams, "stdout");
      v.streams.stderr_stream = read_stream(*streams, "stderr");
      if (streams->ok() && (v.streams.stdin_stream == v.streams.stdout_stream || v.streams.stdin_stream == v.streams.stderr_stream ||
                            v.streams.stdout_stream == v.streams.stderr_stream))
        streams->fail("stdout", "must differ from the other streams of the process");
    }
    r.merge(*streams);
  }
  return finish(r, std::move(v));
}

json to_json(const ProcessResizeParams& v) { return json{{"pid", v.pid}, {"cols", v.size.cols}, {"rows", v.size.rows}}; }

Result<ProcessResizeParams> parse_process_resize_params(const json& j) {
  ParamReader r(j);
  ProcessResizeParams v;
  v.pid = r.integer("pid", true, 1, kMaxPid).value_or(0);
  v.size = read_size(r);
  return finish(r, std::move(v));
}

json to_json(const ProcessSignalParams& v) { return json{{"pid", v.pid}, {"signal", signal_name(v.signal)}, {"group", v.group}}; }

Result<ProcessSignalParams> parse_process_signal_params(const json& j) {
  ParamReader r(j);
  ProcessSignalParams v;
  v.pid = r.integer("pid", true, 1, kMaxPid).value_or(0);
  if (auto sig = r.any("signal", true)) {
    if (sig->is_number_integer() && sig->get<std::int64_t>() >= 1 && sig->get<std::int64_t>() <= 64) {
      v.signal = sig->get<int>();
    } else if (auto named = sig->is_string() ? signal_from_name(sig->get<std::string>()) : std::nullopt) {
      v.signal = *named;
    } else {
      r.fail("signal", "must be a signal number (1-64) or a name such as \"TERM\", got " + dump(*sig).substr(0, 40));
    }
  }
  v.group = r.boolean("group", false).value_or(true);
  return finish(r, std::move(v));
}

json to_json(const ProcessExited& v) {
  json j{{"pid", v.pid}};
  if (v.exit_code) j["exitCode"] = *v.exit_code;
  if (v.signal) {
    j["signal"] = *v.signal;
    j["signalName"] = signal_name(*v.signal);
    j["coreDumped"] = v.core_dumped;
  }
  return j;
}

Result<ProcessExited> parse_process_exited(const json& j) {
  ParamReader r(j);
  ProcessExited v;
  v.pid = r.integer("pid", true, 1, kMaxPid).value_or(0);
  auto code = r.integer("exitCode", false, 0, 255);
  auto sig = r.integer("signal", false, 1, 64);
  if (r.ok() && code.has_value() == sig.has_value()) r.fail("exitCode", "or \"signal\" must be present, and not both");
  if (code) v.exit_code = static_cast<int>(*code);
  if (sig) v.signal = static_cast<int>(*sig);
  v.core_dumped = r.boolean("coreDumped", false).value_or(false);
  return finish(r, std::move(v));
}

}  // namespace lockroom::protocol::channel
