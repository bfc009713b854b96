// JSON of hello, health, guest.resume, limits.set and limit.reached, and signal names; see messages.h.
#include <csignal>

#include "protocol/channel/base64.h"
#include "protocol/channel/message_util.h"
#include "protocol/channel/messages.h"
#include "protocol/signals.h"

namespace lockroom::protocol::channel {

using detail::finish;

namespace detail {
std::string read_base64(ParamReader& reader, const char* field, bool required, std::size_t max) {
  auto text = reader.string(field, required);
  if (!text) return {};
  if (text->size() > (max + 2) / 3 * 4) {
    reader.fail(field, "holds more than " + std::to_string(max) + " bytes (" + std::to_string(text->size()) + " base64 characters)");
    return {};
  }
  auto bytes = base64_decode(*text);
  if (!bytes) {
    reader.fail(field, "is not valid base64 (standard alphabet, padded)");
    return {};
  }
  return std::move(*bytes);
}
}  // namespace detail

namespace {

json settings_json(json j, const Settings& s) {
  j["maxFrame"] = s.max_frame;
  j["streamWindow"] = s.stream_window;
  j["maxStreams"] = s.max_streams;
  j["maxControl"] = s.max_control;
  return j;
}

// Reads the four settings; their ranges are checked by Session::establish().
Settings read_settings(ParamReader& r) {
  Settings s;
  auto u32 = [&r](const char* f) { return static_cast<std::uint32_t>(r.integer(f, true, 0, 0xffffffffLL).value_or(0)); };
  s.max_frame = u32("maxFrame");
  s.stream_window = u32("streamWindow");
  s.max_streams = u32("maxStreams");
  s.max_control = u32("maxControl");
  return s;
}

}  // namespace

json to_json(const HelloParams& v) {
  return settings_json(json{{"protocol", v.protocol}, {"hostVersion", v.host_version}}, v.settings);
}

json to_json(const HelloResult& v) {
  return settings_json(json{{"protocol", v.protocol}, {"agentVersion", v.agent_version}, {"pid", v.pid},
                            {"processLimit", v.process_limit}},
                       v.settings);
}

Result<HelloParams> parse_hello_params(const json& j) {
  ParamReader r(j);
  HelloParams v;
  v.protocol = static_cast<int>(r.integer("protocol", true, 0, 1 << 20).value_or(0));
  v.host_version = r.string("hostVersion", false).value_or("");
  v.settings = read_settings(r);
  return finish(r, std::move(v));
}

Result<HelloResult> parse_hello_result(const json& j) {
  ParamReader r(j);
  HelloResult v;
  v.protocol = static_cast<int>(r.integer("protocol", true, 0, 1 << 20).value_or(0));
  v.agent_version = r.string("agentVersion", true).value_or("");
  if (v.agent_version.size() > 128) r.fail("agentVersion", "is longer than 128 bytes");
  v.pid = r.integer("pid", true, 1, 1 << 30).value_or(0);
  v.process_limit = r.string("processLimit", true).value_or("");
  if (r.ok() && v.process_limit != "cgroup" && v.process_limit != "rlimit")
    r.fail("processLimit", "must be \"cgroup\" or \"rlimit\", got \"" + v.process_limit.substr(0, 32) + "\"");
  v.settings = read_settings(r);
  return finish(r, std::move(v));
}

json to_json(const HealthResult& v) {
  return json{{"uptimeMs", v.uptime_ms},
              {"load", json::array({v.load[0], v.load[1], v.load[2]})},
              {"memory", {{"totalKiB", v.memory_total_kib}, {"availableKiB", v.memory_available_kib}}},
              {"processes", v.processes},
              {"streams", v.streams}};
}

Result<HealthResult> parse_health_result(const json& j) {
  ParamReader r(j);
  HealthResult v;
  v.uptime_ms = r.integer("uptimeMs", true, 0).value_or(0);
  if (auto load = r.any("load", true)) {
    if (!load->is_array() || load->size() != 3 || !(*load)[0].is_number() || !(*load)[1].is_number() || !(*load)[2].is_number()) {
      r.fail("load", "must be an array of three numbers");
    } else {
      for (int i = 0; i < 3; ++i) v.load[i] = (*load)[i].get<double>();
    }
  }
  if (auto memory = r.object("memory", true)) {
    v.memory_total_kib = memory->integer("totalKiB", true, 0).value_or(0);
    v.memory_available_kib = memory->integer("availableKiB", true, 0).value_or(0);
    r.merge(*memory);
  }
  v.processes = r.integer("processes", true, 0).value_or(0);
  v.streams = r.integer("streams", true, 0).value_or(0);
  return finish(r, std::move(v));
}

json to_json(const ResumeParams& v) { return json{{"unixTimeNs", v.unix_time_ns}, {"entropy", base64_encode(v.entropy)}}; }

json to_json(const ResumeResult& v) {
  return json{{"clockSet", v.clock_set}, {"entropyBytes", v.entropy_bytes}, {"reseeded", v.reseeded}};
}

Result<ResumeParams> parse_resume_params(const json& j) {
  ParamReader r(j);
  ResumeParams v;
  v.unix_time_ns = r.integer("unixTimeNs", true, 0).value_or(0);
  v.entropy = detail::read_base64(r, "entropy", true, kMaxEntropy);
  if (r.ok() && v.entropy.size() < kMinEntropy)
    r.fail("entropy", "holds " + std::to_string(v.entropy.size()) + " bytes; at least " + std::to_string(kMinEntropy) + " are needed");
  return finish(r, std::move(v));
}

Result<ResumeResult> parse_resume_result(const json& j) {
  ParamReader r(j);
  ResumeResult v;
  v.clock_set = r.boolean("clockSet", true).value_or(false);
  v.entropy_bytes = r.integer("entropyBytes", true, 0, kMaxEntropy).value_or(0);
  v.reseeded = r.boolean("reseeded", true).value_or(false);
  return finish(r, std::move(v));
}

json to_json(const LimitsParams& v) {
  json j = json::object();
  if (v.max_processes) j["maxProcesses"] = *v.max_processes;
  if (v.max_disk_mib) j["maxDiskMiB"] = *v.max_disk_mib;
  return j;
}

json to_json(const LimitsResult& v) {
  json j{{"enforcement", v.enforcement}, {"diskEnforcement", v.disk_enforcement}};
  j["maxProcesses"] = v.max_processes ? json(*v.max_processes) : json(nullptr);
  j["maxDiskMiB"] = v.max_disk_mib ? json(*v.max_disk_mib) : json(nullptr);
  return j;
}

Result<LimitsParams> parse_limits_params(const json& j) {
  ParamReader r(j);
  LimitsParams v;
  v.max_processes = r.integer("maxProcesses", false, 1, kMaxProcessesLimit);
  v.max_disk_mib = r.integer("maxDiskMiB", false, 1, kMaxDiskMibLimit);
  return finish(r, std::move(v));
}

Result<LimitsResult> parse_limits_result(const json& j) {
  ParamReader r(j);
  LimitsResult v;
  v.max_processes = r.integer("maxProcesses", false, 1, kMaxProcessesLimit);
  v.enforcement = r.string("enforcement", true).value_or("");
  if (r.ok() && v.enforcement != "cgroup" && v.enforcement != "rlimit") r.fail("enforcement", "must be \"cgroup\" or \"rlimit\"");
  v.max_disk_mib = r.integer("maxDiskMiB", false, 1, kMaxDiskMibLimit);
  v.disk_enforcement = r.string("diskEnforcement", true).value_or("");
  if (r.ok() && v.disk_enforcement != "tmpfs" && v.disk_enforcement != "none")
    r.fail("diskEnforcement", "must be \"tmpfs\" or \"none\"");
  return finish(r, std::move(v));
}

const char* guest_limit_name(GuestLimit limit) {
  switch (limit) {
    case GuestLimit::kDisk: return "disk";
    case GuestLimit::kProcesses: return "processes";
    case GuestLimit::kMemory: return "memory";
  }
  return "disk";
}

json to_json(const LimitReached& v) {
  json j{{"limit", guest_limit_name(v.limit)}, {"message", v.message}};
  if (v.pid) j["pid"] = *v.pid;
  if (v.value) j["value"] = *v.value;
  return j;
}

Result<LimitReached> parse_limit_reached(const json& j) {
  ParamReader r(j);
  LimitReached v;
  auto limit = r.string("limit", true);
  if (limit) {
    bool known = false;
    for (GuestLimit l : {GuestLimit::kDisk, GuestLimit::kProcesses, GuestLimit::kMemory}) {
      if (*limit == guest_limit_name(l)) {
        v.limit = l;
        known = true;
      }
    }
    if (!known) r.fail("limit", "must be \"disk\", \"processes\" or \"memory\"");
  }
  v.message = r.string("message", true).value_or("");
  if (r.ok()) detail::check_text(r, "message", v.message, kMaxLimitMessage, false);
  v.pid = r.integer("pid", false, 1, 0x7fffffff);
  v.value = r.integer("value", false, 0, INT64_MAX);
  return finish(r, std::move(v));
}

std::optional<int> signal_from_name(const std::string& name) { return protocol::signal_number(name); }

std::string signal_name(int signal) { return protocol::signal_bare_name(signal).value_or(std::to_string(signal)); }

}  // namespace lockroom::protocol::channel
