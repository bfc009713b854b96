// Host paths (server/common/paths.h) with an injected environment.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "server/common/paths.h"

using lockroom::default_paths;
namespace fs = std::filesystem;

namespace {

std::map<std::string, std::string> g_env;

const char* fake_getenv(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

lockroom::Paths with_env(std::map<std::string, std::string> env) {
  g_env = std::move(env);
  return default_paths(fake_getenv);
}

}  // namespace

TEST_CASE("paths: LOCKROOM_CACHE_DIR and LOCKROOM_STATE_DIR win and are used as given", "[paths]") {
  auto p = with_env({{"LOCKROOM_CACHE_DIR", "/srv/lr-cache"}, {"LOCKROOM_STATE_DIR", "/srv/lr-state"},
                     {"XDG_CACHE_HOME", "/x/cache"}, {"XDG_STATE_HOME", "/x/state"}, {"HOME", "/home/u"}});
  CHECK(p.cache == fs::path("/srv/lr-cache"));
  CHECK(p.state == fs::path("/srv/lr-state"));
}

TEST_CASE("paths: XDG directories get a lockroom folder", "[paths]") {
  auto p = with_env({{"XDG_CACHE_HOME", "/x/cache"}, {"XDG_STATE_HOME", "/x/state"}, {"HOME", "/home/u"}});
  CHECK(p.cache == fs::path("/x/cache/lockroom"));
  CHECK(p.state == fs::path("/x/state/lockroom"));
}

TEST_CASE("paths: HOME's .cache and .local/state are the fallback", "[paths]") {
  auto p = with_env({{"HOME", "/home/u"}});
  CHECK(p.cache == fs::path("/home/u/.cache/lockroom"));
  CHECK(p.state == fs::path("/home/u/.local/state/lockroom"));
}

TEST_CASE("paths: empty variables count as unset", "[paths]") {
  auto p = with_env({{"LOCKROOM_CACHE_DIR", ""}, {"XDG_CACHE_HOME", ""}, {"LOCKROOM_STATE_DIR", ""},
                     {"XDG_STATE_HOME", "/x/state"}, {"HOME", "/home/u"}});
  CHECK(p.cache == fs::path("/home/u/.cache/lockroom"));
  CHECK(p.state == fs::path("/x/state/lockroom"));
}

TEST_CASE("paths: cache and state are chosen independently", "[paths]") {
  auto p = with_env({{"LOCKROOM_STATE_DIR", "/only/state"}, {"XDG_CACHE_HOME", "/x/cache"}, {"HOME", "/home/u"}});
  CHECK(p.cache == fs::path("/x/cache/lockroom"));
  CHECK(p.state == fs::path("/only/state"));
}

TEST_CASE("paths: with no HOME at all, the temporary directory stands in", "[paths]") {
  auto p = with_env({});
  CHECK(p.cache == fs::temp_directory_path() / ".cache" / "lockroom");
  CHECK(p.state == fs::temp_directory_path() / ".local/state" / "lockroom");
}

TEST_CASE("paths: without an injected getenv the real environment is read", "[paths]") {
  const char* saved = std::getenv("LOCKROOM_CACHE_DIR");
  std::string old = saved ? saved : "";
  setenv("LOCKROOM_CACHE_DIR", "/from/the/real/env", 1);
  auto p = default_paths();
  if (saved) setenv("LOCKROOM_CACHE_DIR", old.c_str(), 1);
  else unsetenv("LOCKROOM_CACHE_DIR");
  CHECK(p.cache == fs::path("/from/the/real/env"));
}

TEST_CASE("paths: the shared server's folder: LOCKROOM_SERVER_DIR, else XDG_RUNTIME_DIR/lockroom, else <state>/server", "[paths]") {
  auto paths = with_env({{"LOCKROOM_STATE_DIR", "/s"}});
  CHECK(lockroom::server_dir(paths, fake_getenv) == fs::path("/s/server"));
  g_env = {{"LOCKROOM_STATE_DIR", "/s"}, {"XDG_RUNTIME_DIR", "/run/user/7"}};
  CHECK(lockroom::server_dir(paths, fake_getenv) == fs::path("/run/user/7/lockroom"));
  g_env = {{"XDG_RUNTIME_DIR", "/run/user/7"}, {"LOCKROOM_SERVER_DIR", "/tmp/lr"}};
  CHECK(lockroom::server_dir(paths, fake_getenv) == fs::path("/tmp/lr"));
  g_env = {{"XDG_RUNTIME_DIR", ""}};
  CHECK(lockroom::server_dir(paths, fake_getenv) == fs::path("/s/server"));
}
