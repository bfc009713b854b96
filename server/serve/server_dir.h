// The shared server's folder (common/paths.h's server_dir): made private and checked, and the
// names of what lives in it. Used by both ends: the server (shared_server.h) and the bridge
// (bridge.h). Blocking file-system calls, at start-up only.
#pragma once

#include <filesystem>
#include <string>

#include "server/common/result.h"

namespace lockroom::serve {

// Creates `dir` (mode 0700) when missing; refuses one that another user owns or that others
// can enter (a socket there could be someone else's), naming it and what to do.
Result<void> ensure_private_dir(const std::filesystem::path& dir);

// The socket of the server of this lockroom version (each version has its own server: a
// bridge never talks to a server of another version).
std::filesystem::path server_socket_path(const std::filesystem::path& dir, const std::string& version);
// The lock that makes two bridges starting at once start one server.
std::filesystem::path server_lock_path(const std::filesystem::path& dir);

}  // namespace lockroom::serve
