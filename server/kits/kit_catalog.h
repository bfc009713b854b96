// KitCatalog: where kits are found, by name, and reading them from disk.
//
// A kit is named on the command line or in sandbox/create as a name (`node`) or as a path to a
// kit file (anything with a '/' or ending in .yaml/.yml). Names are looked up, first match wins, in:
//   1. each directory of $LOCKROOM_KIT_PATH (':'-separated)
//   2. the workspace's own `.lockroom/kits/` (a project's kits travel with its repository)
//   3. the user's `$XDG_CONFIG_HOME/lockroom/kits` (else `~/.config/lockroom/kits`)
//   4. the kits that ship with lockroom (the source tree's `kits/`, or `share/lockroom/kits`
//      beside the installed binary)
// Inside a directory, kit `name` is `name/kit.yaml` or `name.yaml`. A kit file's `name` must
// match the name it was found under.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "server/common/result.h"
#include "server/kits/kit_spec.h"

namespace lockroom::kits {

constexpr std::size_t kMaxKitFileSize = 4 << 20;

struct KitLocation {
  std::string name;
  std::filesystem::path file;
  std::string origin;  // "LOCKROOM_KIT_PATH", "workspace", "user", "built-in"
};

// Whether a kit reference names a kit file (it has a '/' or a YAML suffix) rather than a kit by name.
bool is_kit_path(const std::string& ref);

class KitCatalog {
 public:
  struct Root {
    std::filesystem::path dir;
    std::string origin;
  };

  // The search path described above. `workspace` may be empty; `getenv_fn` is injectable for tests.
  static KitCatalog standard(const std::filesystem::path& workspace, std::function<const char*(const char*)> getenv_fn = nullptr);
  // The same with the variables read from `env` (an editor's environment, as a shared server got
  // it from the editor's bridge) instead of this process's; null `env`: this process's.
  static KitCatalog standard_for(const std::filesystem::path& workspace, const std::map<std::string, std::string>* env);
  explicit KitCatalog(std::vector<Root> roots) : roots_(std::move(roots)) {}

  // A name, or a path to a kit file. Not found: kNotFound listing where it looked.
  Result<KitLocation> find(const std::string& ref) const;
  // Every kit visible, first match per name, sorted by name.
  std::vector<KitLocation> list() const;
  // find() + read + parse; the kit's name must match the one asked for.
  Result<KitSpec> load(const std::string& ref) const;

  const std::vector<Root>& roots() const { return roots_; }

 private:
  std::vector<Root> roots_;
};

// Reads one kit file (bounded size) and parses it.
Result<KitSpec> load_kit_file(const std::filesystem::path& file);

// Where the built-in kits are: next to the binary when installed, else the source tree's.
std::filesystem::path builtin_kits_dir();

}  // namespace lockroom::kits
