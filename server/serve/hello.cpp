// The bridge's handshake; see hello.h.
#include "server/serve/hello.h"

#include <charconv>
#include <optional>

#include <nlohmann/json.hpp>

namespace lockroom::serve {

using json = nlohmann::json;

namespace {

Error bad(const std::string& what) {
  return make_error(ErrorCode::kInvalidInput, "bad hello from a lockroom bridge: " + what +
                                                  " (is the bridge the same lockroom version as the server?)");
}

}  // namespace

std::string hello_line(const Hello& hello) {
  json env = json::object();
  for (const auto& [name, value] : hello.env) env[name] = value;
  json line{{"lockroomHello", kHelloVersion},
            {"framing", hello.framing == rpc::FramingKind::kNdjson ? "ndjson" : "lsp"},
            {"maxMessageBytes", hello.max_message_bytes},
            {"pid", hello.pid},
            {"env", std::move(env)}};
  return line.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

Result<Hello> read_hello(std::string_view line) {
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  if (!j.contains("lockroomHello") || j["lockroomHello"] != kHelloVersion)
    return bad("\"lockroomHello\" must be " + std::to_string(kHelloVersion));
  Hello out;
  if (j.contains("framing")) {
    if (j["framing"] == "ndjson") out.framing = rpc::FramingKind::kNdjson;
    else if (j["framing"] == "lsp") out.framing = rpc::FramingKind::kContentLength;
    else return bad("\"framing\" must be \"lsp\" or \"ndjson\"");
  }
  if (j.contains("maxMessageBytes")) {
    if (!j["maxMessageBytes"].is_number_unsigned() || j["maxMessageBytes"].get<std::uint64_t>() < 1024)
      return bad("\"maxMessageBytes\" must be a number of at least 1024");
    out.max_message_bytes = j["maxMessageBytes"].get<std::size_t>();
  }
  if (j.contains("pid")) {
    if (!j["pid"].is_number_integer()) return bad("\"pid\" must be an integer");
    out.pid = j["pid"].get<int>();
  }
  if (j.contains("env")) {
    if (!j["env"].is_object()) return bad("\"env\" must be an object");
    for (const auto& [name, value] : j["env"].items()) {
      if (!value.is_string()) return bad("\"env." + name + "\" must be a string");
      out.env[name] = value.get<std::string>();
    }
  }
  return out;
}

std::string welcome_line(const Welcome& welcome) {
  return json{{"lockroomServer", kHelloVersion}, {"pid", welcome.pid}, {"log", welcome.log}}.dump(-1, ' ', false, json::error_handler_t::replace) +
         "\n";
}

std::string refusal_line(const std::string& message) {
  return json{{"lockroomServer", kHelloVersion}, {"error", message}}.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

Result<Welcome> read_welcome(std::string_view line) {
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("lockroomServer"))
    return make_error(ErrorCode::kUnavailable, "the lockroom server answered something else than its welcome: " +
                                                   std::string(line.substr(0, 200)));
  if (j.contains("error") && j["error"].is_string())
    return make_error(ErrorCode::kUnavailable, "the lockroom server refused the connection: " + j["error"].get<std::string>());
  Welcome out;
  if (j.contains("pid") && j["pid"].is_number_integer()) out.pid = j["pid"].get<int>();
  if (j.contains("log") && j["log"].is_string()) out.log = j["log"].get<std::string>();
  return out;
}

std::string end_record(int exit_code) { return std::string(1, '\0') + "exit " + std::to_string(exit_code) + "\n"; }

std::optional<int> read_end_record(std::string_view after_nul) {
  constexpr std::string_view kPrefix = "exit ";
  if (after_nul.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  std::string_view rest = after_nul.substr(kPrefix.size());
  auto newline = rest.find('\n');
  if (newline == std::string_view::npos) return std::nullopt;
  int code = 0;
  auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + newline, code);
  if (ec != std::errc() || ptr != rest.data() + newline) return std::nullopt;
  return code;
}

}  // namespace lockroom::serve
