// The few lines a `lockroom serve --stdio` bridge and the shared lockroom server exchange around
// the editor's bytes (server/serve/bridge.h, shared_server.h).
//
//   bridge → server   one JSON line: {"lockroomHello": 1, "framing": "lsp" | "ndjson",
//                     "maxMessageBytes": N, "pid": P, "env": {NAME: VALUE, …}}
//   server → bridge   one JSON line: {"lockroomServer": 1, "pid": S, "log": "…"} — or
//                     {"lockroomServer": 1, "error": "…"} and the connection closes
//   then              the editor's bytes both ways, unchanged, in the framing the hello named
//   server → bridge   at the end of a session the server ended itself (`exit`, or the bridge's
//                     input ended), a NUL byte and "exit N\n": the bridge exits with code N.
// A NUL byte never occurs in what the server sends the editor (JSON text escapes it, and
// framing headers are ASCII), so the bridge finds the end record by its first NUL. A connection
// that ends without it means the server went away. `env` is the bridge's environment (the
// editor's): secrets `from: {env: NAME}` are read there. Pure.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "server/common/result.h"
#include "server/rpc/framing.h"

namespace lockroom::serve {

inline constexpr int kHelloVersion = 1;
inline constexpr std::size_t kMaxHelloBytes = 1u << 20;  // the environment may be large

struct Hello {
  rpc::FramingKind framing = rpc::FramingKind::kContentLength;
  std::size_t max_message_bytes = rpc::kDefaultMaxMessageBytes;
  int pid = 0;
  std::map<std::string, std::string> env;
};

std::string hello_line(const Hello& hello);
// `line` without its newline. Errors name the bad field.
Result<Hello> read_hello(std::string_view line);

struct Welcome {
  int pid = 0;
  std::string log;
};
std::string welcome_line(const Welcome& welcome);
std::string refusal_line(const std::string& message);
// The server's answer: its pid, or the refusal's message as an error.
Result<Welcome> read_welcome(std::string_view line);

// The end-of-session record.
std::string end_record(int exit_code);
// The exit code in what follows the NUL (e.g. "exit 0\n"), if it is one.
std::optional<int> read_end_record(std::string_view after_nul);

}  // namespace lockroom::serve
