// What the agent workspace tests share: a temporary source repository on the host and a workspace
// path for the guest (World), the host's git isolated from this machine's configuration (sh), a
// first commit with a file, an executable, a symlink, a folder and a .gitignore (seed), and the
// AgentClient calls run to completion on the harness's loop (import, manifest).
#pragma once

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "tests/unit/channel/channel_harness.h"

namespace lockroom::testing {

namespace fs = std::filesystem;
namespace wire = lockroom::protocol::channel;
using lockroom::channel::AgentClient;
using namespace std::chrono_literals;


struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "lockroom-workspace-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

// The host's git, isolated from this machine's configuration, with fixed identities.
inline std::string sh(const std::string& command) {
  std::string full = "env GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com "
                     "GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com sh -c '" + command + "' 2>&1";
  FILE* pipe = ::popen(full.c_str(), "r");
  REQUIRE(pipe);
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  int status = ::pclose(pipe);
  INFO(command << "\n" << out);
  REQUIRE(status == 0);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

inline void write(const fs::path& path, const std::string& content) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << content;
}

inline std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

template <typename T>
Result<T> wait_for(AgentHarness& h, std::function<void(AgentClient::Done<T>)> call) {
  std::optional<Result<T>> got;
  call([&](Result<T> r) { got.emplace(std::move(r)); });
  REQUIRE(h.loop.run_until([&] { return got.has_value(); }, 60s));
  return std::move(*got);
}

// A source repository on the host and a workspace path for the guest, both temporary.
struct World {
  TempDir dir;
  fs::path src = dir.path / "src";
  fs::path ws = dir.path / "guest" / "workspace";
  std::string q(const fs::path& p) const { return "\"" + p.string() + "\""; }

  std::string commit(const std::string& message) {
    sh("cd " + q(src) + " && git add -A && git commit -q -m " + message);
    return sh("git -C " + q(src) + " rev-parse HEAD");
  }
  // A pack of what `tip` has and `have` does not; thin (deltas against `have`'s objects) if asked.
  std::string pack(const std::string& tip, const std::string& have = "", bool thin = false) {
    fs::path file = dir.path / "pack";
    sh("cd " + q(src) + " && printf \"%s\\n\" " + tip + (have.empty() ? "" : " ^" + have) + " | git pack-objects -q --revs " +
       (thin ? "--thin " : "") + "--stdout > " + q(file));
    return slurp(file);
  }
  wire::WorkspaceCheckoutParams checkout(const std::string& commit, std::optional<std::string> base = std::nullopt) const {
    wire::WorkspaceCheckoutParams p;
    p.path = ws.string();
    p.commit = commit;
    p.base = std::move(base);
    return p;
  }
  std::string hash_object(const std::string& rel) { return sh("git hash-object " + q(ws / rel)); }
  std::string status() { return sh("git -C " + q(ws) + " status --porcelain"); }
};

// The first commit of every test: a file, an executable, a symlink, a folder and a .gitignore.
inline std::string seed(World& w) {
  sh("git init -q -b main " + w.q(w.src));
  write(w.src / "a.txt", "alpha\n");
  write(w.src / "tool.sh", "#!/bin/sh\necho tool\n");
  fs::permissions(w.src / "tool.sh", fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec, fs::perm_options::add);
  fs::create_symlink("a.txt", w.src / "link");
  write(w.src / "dir" / "b.txt", "bravo\n");
  write(w.src / ".gitignore", "*.log\nbuild/\n");
  return w.commit("first");
}

inline Result<wire::WorkspaceCheckoutResult> import(AgentHarness& h, const wire::WorkspaceCheckoutParams& p, std::string pack) {
  return wait_for<wire::WorkspaceCheckoutResult>(h, [&](auto done) { h.client->import_workspace(p, std::move(pack), 64 << 20, done); });
}

inline Result<channel::WorkspaceManifest> manifest(AgentHarness& h, World& w) {
  wire::WorkspaceManifestParams p;
  p.path = w.ws.string();
  return wait_for<channel::WorkspaceManifest>(h, [&](auto done) { h.client->manifest(p, done); });
}

inline const wire::ManifestEntry* find(const channel::WorkspaceManifest& m, const std::string& path) {
  for (const auto& e : m.entries)
    if (e.path == path) return &e;
  return nullptr;
}

// Files written in this moment are "racily clean" and never cached; the cache test waits twice
// the agent's racy margin (100 ms) so that the checked-out files can be.
// A manifest of `w`'s workspace relative to manifest `since` (partial when the agent still has it).
inline Result<channel::WorkspaceManifest> manifest_since(AgentHarness& h, World& w, std::int64_t since) {
  wire::WorkspaceManifestParams p;
  p.path = w.ws.string();
  p.since = since;
  return wait_for<channel::WorkspaceManifest>(h, [&](auto done) { h.client->manifest(p, done); });
}

// `before` with a partial manifest's records applied.
inline std::map<std::string, wire::ManifestEntry> patched(const channel::WorkspaceManifest& before, const channel::WorkspaceManifest& partial) {
  std::map<std::string, wire::ManifestEntry> out;
  for (const auto& e : before.entries) out[e.path] = e;
  for (const auto& e : partial.entries) {
    if (e.mode == wire::kModeRemoved) out.erase(e.path);
    else out[e.path] = e;
  }
  return out;
}

inline std::map<std::string, wire::ManifestEntry> by_path(const channel::WorkspaceManifest& m) {
  std::map<std::string, wire::ManifestEntry> out;
  for (const auto& e : m.entries) out[e.path] = e;
  return out;
}

// Same paths with the same modes, ids and sizes.
inline bool same(const std::map<std::string, wire::ManifestEntry>& a, const std::map<std::string, wire::ManifestEntry>& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [path, e] : a) {
    auto it = b.find(path);
    if (it == b.end() || it->second.id != e.id || it->second.mode != e.mode || it->second.size != e.size) return false;
  }
  return true;
}

inline void let_clock_pass() { std::this_thread::sleep_for(200ms); }

}  // namespace lockroom::testing
