// Where lockroom keeps things on the host.
//
//   cache   images and kernels, rebuilt on demand   $LOCKROOM_CACHE_DIR, else $XDG_CACHE_HOME/lockroom, else ~/.cache/lockroom
//   state   per-sandbox state directories (0700)    $LOCKROOM_STATE_DIR, else $XDG_STATE_HOME/lockroom, else ~/.local/state/lockroom
//   server  the shared server's socket and lock     $LOCKROOM_SERVER_DIR, else $XDG_RUNTIME_DIR/lockroom, else <state>/server
// Pure functions of the environment; nothing is created here.
#pragma once

#include <filesystem>
#include <string>

namespace lockroom {

struct Paths {
  std::filesystem::path cache;
  std::filesystem::path state;
};

// Reads the variables above through `getenv` (injectable for tests).
Paths default_paths(const char* (*getenv_fn)(const char*) = nullptr);

// The folder of the per-user shared server (`lockroom serve`, server/serve/shared_server.h).
std::filesystem::path server_dir(const Paths& paths, const char* (*getenv_fn)(const char*) = nullptr);

}  // namespace lockroom
