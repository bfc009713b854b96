// Templates kept on disk so that a later lockroom process restores from them instead of booting.
//
//   <root>/<key>/meta.json      what the template was made from, sizes and digests (written last)
//   <root>/<key>/device.state   QEMU's device state (tens of KB)
//   <ram_root>/<key>-<nonce>.ram  the guest RAM file (on /dev/shm when usable, else <root>/ram)
//
// <root> is `<cache>/templates` and <ram_root> `/dev/shm/lockroom-<uid>`; both 0700, files 0600
// (a workspace template's RAM holds the user's code). The key is a digest of everything that
// makes a snapshot valid (template_identity()). A template is built in `<root>/.build-…` and
// renamed to its key when complete: when two processes build the same one, the first rename wins
// and the other uses the winner's. load_stored() checks every file against meta.json (digest of
// the state, size, inode and mtime of the RAM file) and refuses anything made by another
// version; a refused or failing template is removed with remove_stored(), never trusted.
// Last use is the directory's mtime; evict() keeps the most recent within a count and byte cap.
// Blocking file-system calls: worker thread or CLI (each call is a few small files).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/common/result.h"
#include "server/vm/qemu_argv.h"

namespace lockroom::vm {

inline constexpr int kTemplateFormatVersion = 1;

struct TemplateDirs {
  std::filesystem::path root;
  std::filesystem::path ram_root;
};

// `<cache>/templates` and the RAM dir (see above). Nothing is created here.
TemplateDirs default_template_dirs(const std::filesystem::path& cache);
// Creates both dirs 0700 (fixing the mode of ours); fails when one is a symlink or another
// user's, so nothing is written where someone else could read or swap it.
Result<void> prepare_template_dirs(const TemplateDirs& dirs);

// The text a base template's key is the digest of: the image, the machine (QEMU binary identity,
// accelerator, vCPUs, memory, translation cache, kernel, initrd, command line without the
// per-process TSC measurement, channel), the host CPU, and the lockroom and format versions.
std::string template_identity(const QemuConfig& machine, const std::string& image_hash);
// A workspace template: its base's identity, the workspace's real path and the snapshot options
// (a digest of the secret policy and limits: a template must not hold what another policy withholds).
std::string workspace_template_identity(const std::string& base_identity, const std::string& workspace_path,
                                        const std::string& options_digest);
// 32 hex digits of SHA-256 of `identity`.
std::string template_key(const std::string& identity);

enum class TemplateKind { kBase, kWorkspace };

struct TemplateMeta {
  std::string key;
  std::string identity;
  TemplateKind kind = TemplateKind::kBase;
  std::filesystem::path ram_file;
  std::uint64_t ram_bytes = 0;
  std::int64_t ram_mtime_ns = 0;
  std::uint64_t ram_inode = 0;
  std::uint64_t state_bytes = 0;
  std::string state_sha256;
  std::int64_t boot_ms = 0;
  std::int64_t created_unix = 0;
  // Workspace templates: the host folder and the snapshot commit its guest holds at /workspace.
  std::string workspace_path;
  std::string workspace_commit;
  std::string workspace_branch;
};

nlohmann::json meta_to_json(const TemplateMeta& meta);
Result<TemplateMeta> meta_from_json(const nlohmann::json& j);

struct StoredTemplate {
  std::filesystem::path dir;
  TemplateMeta meta;
  std::filesystem::path state_file() const { return dir / "device.state"; }
};

// A fresh build dir `<root>/.build-<key>-<pid>-<n>` (0700) and the RAM file name for it.
struct TemplateBuild {
  std::filesystem::path dir;
  std::filesystem::path ram_file;
};
Result<TemplateBuild> begin_build(const TemplateDirs& dirs, const std::string& key);
// Fills in the RAM file's and state file's facts, writes meta.json (0600), renames the build dir
// to `<root>/<key>`. Returns false (and leaves the build dir) when another process published it first.
Result<bool> publish_build(const TemplateDirs& dirs, const TemplateBuild& build, TemplateMeta meta);
// Removes a build dir and its RAM file (an abandoned or losing build).
void discard_build(const TemplateBuild& build);

// The template `<root>/<key>` if it is complete, made for `identity`, and its files are those
// meta.json describes. kNotFound when there is none; any other error means it must be removed.
// Marks it used (the directory's mtime) when it loads.
Result<StoredTemplate> load_stored(const TemplateDirs& dirs, const std::string& key, const std::string& identity);
// Removes `<root>/<key>` and its RAM file (renamed aside first, so no one loads a half-removed one).
void remove_stored(const TemplateDirs& dirs, const std::string& key);

struct TemplateListing {
  StoredTemplate stored;
  std::uint64_t disk_bytes = 0;  // state + RAM file, as allocated (RAM files are sparse)
  std::chrono::system_clock::time_point last_used;
};
// Every published template with a readable meta.json, most recently used first.
std::vector<TemplateListing> list_stored(const TemplateDirs& dirs);

// Removes the least recently used templates of `kind` beyond `max_count` or `max_bytes`,
// never `keep`. Returns the keys removed.
std::vector<std::string> evict(const TemplateDirs& dirs, TemplateKind kind, std::size_t max_count, std::uint64_t max_bytes,
                               const std::string& keep);
// Removes build dirs and RAM files left by lockroom processes that are gone (crashed mid-build,
// or ephemeral templates of a killed process). Returns how many were removed.
std::size_t sweep_stale(const TemplateDirs& dirs);

}  // namespace lockroom::vm
