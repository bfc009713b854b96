// What an `npm install` left behind, read for the npm layer (npm_layer.h): the pure half.
//
// The host's npm installs the kits' packages into a staging prefix laid out as the guest will
// see it (`usr/local/lib/node_modules/...`). These functions read npm's own files from there:
// the packages asked for (the prefix's package.json), each one's `bin` entries (its
// package.json), the resolved tree (package-lock.json), and make what goes in /usr/local/bin.
// Pure; no I/O.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/common/result.h"

namespace lockroom::vm::image {

// Where the packages are in the guest, and where their programs go.
inline constexpr std::string_view kNpmModulesDir = "usr/local/lib/node_modules";
inline constexpr std::string_view kNpmBinDir = "usr/local/bin";

// One program of a package: /usr/local/bin/NAME runs node_modules/PACKAGE/PATH.
struct NpmBin {
  std::string name;     // a plain file name
  std::string package;  // "@zed-industries/claude-agent-acp"
  std::string path;     // relative to the package's folder, normalised, inside it
  friend bool operator==(const NpmBin&, const NpmBin&) = default;
};

// The top-level packages of an install: the keys of the prefix package.json's "dependencies".
std::vector<std::string> npm_installed_names(const nlohmann::json& prefix_package_json);

// A package's `bin` (a path, named after the package, or {name: path}). A name with a '/', or a
// path leaving the package's folder, is an error naming it.
Result<std::vector<NpmBin>> npm_package_bins(const std::string& package, const nlohmann::json& package_json);

// "name@version" for every package in a package-lock.json (lockfileVersion 2 or 3), sorted.
// The lock also lists optional packages for other platforms that npm did not install; with
// `installed` (given the entry's path, "node_modules/@s/b"), only those it says were.
std::vector<std::string> npm_resolved_packages(const nlohmann::json& lock,
                                               const std::function<bool(const std::string& path)>& installed = nullptr);

// Whether a program's first bytes say it runs under node ("#!/usr/bin/env node", "#!/usr/bin/node").
// The wrapper runs it as `node FILE`: options on the #! line (`env -S node --flag`) are not kept.
bool npm_bin_runs_under_node(std::string_view head);

// /usr/local/bin/NAME for a node program: a shell script that runs it with the guest's node
// (the guest has no /usr/bin/env for the usual "#!/usr/bin/env node" line).
std::string npm_node_wrapper(const NpmBin& bin);

}  // namespace lockroom::vm::image
