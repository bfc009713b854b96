// Connecting to the per-user shared lockroom server (shared_server.h) as one of its editor
// connections: what the `lockroom serve --stdio` bridge (bridge.h) and `lockroom acp --shared`
// (server/acp/lockroom_link.h) do before their first message.
//
// Connect to <dir>/server-<version>.sock; when nobody answers, take <dir>/server.lock (flock: two
// clients starting at once start one server), try again, and else start `lockroom serve
// --server` detached (its own session, stdin /dev/null, its output appended to the log file) and
// wait for its socket. Then the hello (hello.h: the framing and this process's environment,
// which is the editor's) and the welcome. A server that was exiting (idle) as we connected
// closes before its welcome: that is tried again. Blocking, one thread; no libuv.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "server/common/result.h"
#include "server/rpc/framing.h"
#include "server/serve/hello.h"

namespace lockroom::serve {

struct SharedServerTarget {
  std::filesystem::path dir;      // the server folder
  std::filesystem::path log;      // the log of a server this client starts
  std::string version;            // picks the socket (server_dir.h)
  rpc::FramingKind framing = rpc::FramingKind::kContentLength;
  std::size_t max_message_bytes = rpc::kDefaultMaxMessageBytes;
  std::vector<std::string> server_args;  // after `lockroom serve --server`, for a server it starts
  std::chrono::milliseconds start_timeout = std::chrono::seconds(30);
};

struct SharedConnection {
  int fd = -1;  // the connected socket (close-on-exec), past the welcome
  Welcome welcome;
};

// Connects (starting the server when there is none) and says hello; errors say what to look at.
Result<SharedConnection> connect_shared_server(const SharedServerTarget& target);

// Writes all of `data` to a blocking or non-blocking descriptor; false when the peer is gone.
bool write_all(int fd, const char* data, std::size_t size);

}  // namespace lockroom::serve
