// Agent settings parsing; see settings.h.
#include "guest/settings.h"

#include <charconv>
#include <sstream>

namespace lockroom::agent {

namespace {

std::optional<std::int64_t> to_int(const std::string& text) {
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<LogLevel> to_level(const std::string& text) {
  if (text == "debug") return LogLevel::kDebug;
  if (text == "info") return LogLevel::kInfo;
  if (text == "warning" || text == "warn") return LogLevel::kWarn;
  if (text == "error") return LogLevel::kError;
  return std::nullopt;
}

Error bad(std::string message) { return make_error(ErrorCode::kInvalidInput, std::move(message) + "\n" + usage()); }

Result<void> apply_net_flag(const std::string& flag, const std::string& value, NetSettings& net) {
  if (flag == "--net-cert-dir") {
    if (value.empty() || value[0] != '/') return bad("--net-cert-dir needs an absolute directory, got \"" + value + "\"");
    net.cert_dir = value;
    return {};
  }
  auto n = to_int(value);
  if (flag == "--net-max-connections") {
    if (!n || *n < 1 || *n > 4096) return bad("--net-max-connections needs a number in 1..4096, got \"" + value + "\"");
    net.max_connections = *n;
    return {};
  }
  bool dns = flag == "--net-dns-port";
  if (!n || *n < (dns ? -1 : 0) || *n > 65535)
    return bad(flag + " needs a port in 0..65535" + (dns ? " or -1 (off)" : "") + ", got \"" + value + "\"");
  if (flag == "--net-http-port") net.http_port = *n;
  if (flag == "--net-socks-port") net.socks_port = *n;
  if (dns) net.dns_port = *n < 0 ? std::nullopt : std::optional<std::int64_t>(*n);
  return {};
}

}  // namespace

std::string usage() {
  return "usage: lockroom-agent [--port PATH | --port-name NAME | --connect UNIX_SOCKET | --fd N]\n"
         "                      [--no-clock] [--cgroup-root DIR] [--max-procs N] [--log-level LEVEL]\n"
         "                      [--net-http-port N] [--net-socks-port N] [--net-dns-port N|-1]\n"
         "                      [--net-max-connections N] [--net-cert-dir DIR]\n"
         "Serves the lockroom channel (protocol/channel.md). Without a transport flag it serves the\n"
         "virtio-serial port named by lockroom.port= on the kernel command line (default \"agent\").";
}

void apply_kernel_cmdline(const std::string& cmdline, AgentSettings& settings) {
  std::istringstream words(cmdline);
  std::string word;
  while (words >> word) {
    auto eq = word.find('=');
    if (word.rfind("lockroom.", 0) != 0 || eq == std::string::npos) continue;
    std::string key = word.substr(9, eq - 9);
    std::string value = word.substr(eq + 1);
    if (key == "port" && !value.empty()) {
      settings.port_name = value;
    } else if (key == "maxprocs") {
      if (auto n = to_int(value); n && *n > 0) settings.max_processes = *n;
      else log_warn("ignoring lockroom.maxprocs=" + value + ": not a positive integer");
    } else if (key == "cgroup") {
      settings.cgroup = value != "0";
    } else if (key.rfind("net.", 0) == 0) {
      auto n = to_int(value);
      std::string what = key.substr(4);
      if (!n || *n < 0 || *n > 65535 || (what == "max" && (*n < 1 || *n > 4096)) || (what != "dns" && what != "max" && *n == 0)) {
        log_warn("ignoring " + word + ": not a valid " + (what == "max" ? "connection count" : "port"));
      } else if (what == "http") {
        settings.net.http_port = *n;
      } else if (what == "socks") {
        settings.net.socks_port = *n;
      } else if (what == "dns") {
        settings.net.dns_port = *n == 0 ? std::nullopt : std::optional<std::int64_t>(*n);
      } else if (what == "max") {
        settings.net.max_connections = *n;
      } else {
        log_warn("ignoring unknown kernel parameter " + word);
      }
    } else if (key == "log") {
      if (auto level = to_level(value)) settings.log_level = *level;
    } else {
      log_warn("ignoring unknown kernel parameter " + word);
    }
  }
}

Result<void> apply_flags(const std::vector<std::string>& args, AgentSettings& settings) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    auto value = [&](const char* what) -> std::optional<std::string> {
      if (i + 1 >= args.size()) return std::nullopt;
      (void)what;
      return args[++i];
    };
    if (flag == "--version") {
      settings.show_version = true;
    } else if (flag == "--help" || flag == "-h") {
      settings.show_help = true;
    } else if (flag == "--no-clock") {
      settings.set_clock = false;
    } else if (flag == "--port" || flag == "--connect" || flag == "--port-name" || flag == "--fd" || flag == "--cgroup-root" ||
               flag == "--max-procs" || flag == "--log-level" || flag == "--net-http-port" || flag == "--net-socks-port" ||
               flag == "--net-dns-port" || flag == "--net-max-connections" || flag == "--net-cert-dir") {
      auto v = value(flag.c_str());
      if (!v) return bad(flag + " needs a value");
      if (flag == "--port") {
        settings.transport = TransportKind::kPortPath;
        settings.path = *v;
      } else if (flag == "--connect") {
        settings.transport = TransportKind::kConnect;
        settings.path = *v;
      } else if (flag == "--port-name") {
        settings.transport = TransportKind::kPortName;
        settings.port_name = *v;
      } else if (flag == "--fd") {
        auto n = to_int(*v);
        if (!n || *n < 0 || *n > 1 << 20) return bad("--fd needs a descriptor number, got \"" + *v + "\"");
        settings.transport = TransportKind::kFd;
        settings.fd = static_cast<int>(*n);
      } else if (flag.rfind("--net-", 0) == 0) {
        if (auto applied = apply_net_flag(flag, *v, settings.net); !applied) return applied;
      } else if (flag == "--cgroup-root") {
        settings.cgroup_root = *v;
      } else if (flag == "--max-procs") {
        auto n = to_int(*v);
        if (!n || *n < 1) return bad("--max-procs needs a positive integer, got \"" + *v + "\"");
        settings.max_processes = *n;
      } else {
        auto level = to_level(*v);
        if (!level) return bad("--log-level must be debug, info, warning or error, got \"" + *v + "\"");
        settings.log_level = *level;
      }
    } else {
      return bad("unknown argument \"" + flag + "\"");
    }
  }
  return {};
}

}  // namespace lockroom::agent
