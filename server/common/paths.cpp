// default_paths; see paths.h.
#include "server/common/paths.h"

#include <cstdlib>

namespace lockroom {

namespace {
const char* real_getenv(const char* name) { return std::getenv(name); }

std::filesystem::path pick(const char* (*env)(const char*), const char* own, const char* xdg, const char* home_rel) {
  if (const char* v = env(own); v && *v) return v;
  if (const char* v = env(xdg); v && *v) return std::filesystem::path(v) / "lockroom";
  const char* home = env("HOME");
  std::filesystem::path base = (home && *home) ? std::filesystem::path(home) : std::filesystem::temp_directory_path();
  return base / home_rel / "lockroom";
}
}  // namespace

Paths default_paths(const char* (*getenv_fn)(const char*)) {
  auto env = getenv_fn ? getenv_fn : real_getenv;
  return Paths{pick(env, "LOCKROOM_CACHE_DIR", "XDG_CACHE_HOME", ".cache"),
               pick(env, "LOCKROOM_STATE_DIR", "XDG_STATE_HOME", ".local/state")};
}

std::filesystem::path server_dir(const Paths& paths, const char* (*getenv_fn)(const char*)) {
  auto env = getenv_fn ? getenv_fn : real_getenv;
  if (const char* v = env("LOCKROOM_SERVER_DIR"); v && *v) return v;
  if (const char* v = env("XDG_RUNTIME_DIR"); v && *v) return std::filesystem::path(v) / "lockroom";
  return paths.state / "server";
}

}  // namespace lockroom
