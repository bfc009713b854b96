// npm package specs as kits may write them in `npm:` (kit_spec.h), checked strictly.
//
// Two forms, nothing else (no git URLs, no http tarballs, no aliases, no workspaces):
//   NAME[@VERSION]   a registry package: "@zed-industries/claude-agent-acp@0.23.1", "left-pad".
//                    NAME is npm's: lower-case, optionally "@scope/"; VERSION an exact version
//                    (recommended: the layer is cached by the spec's text), a range or a tag.
//   file:PATH        a package tarball (.tgz / .tar.gz) made by `npm pack`; a relative PATH is
//                    taken from the kit file's folder and stored absolute.
// The registry is never named here: the host's npm configuration decides (npm_layer.h).
// Used by kit_spec.cpp (kit files) and vm/image/npm_layer.cpp (the layer's key). Pure; no I/O.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "server/common/result.h"

namespace lockroom::kits {

constexpr std::size_t kMaxNpmSpecs = 64;
constexpr std::size_t kMaxNpmNameLength = 214;  // npm's own limit

// "@scope/name" or "name", as npm accepts new package names.
bool valid_npm_name(const std::string& name);

// The spec checked and normalised (a file: path made absolute against `kit_dir`, lexically).
// The error says what is wrong with the spec and shows the accepted forms.
Result<std::string> normalize_npm_spec(const std::string& spec, const std::filesystem::path& kit_dir);

// The package name a registry spec installs ("@a/b@1.0.0" -> "@a/b"); none for file: specs.
std::optional<std::string> npm_spec_name(const std::string& spec);
// The tarball of a file: spec; none for registry specs.
std::optional<std::filesystem::path> npm_spec_file(const std::string& spec);

// Sorted, without duplicates; each already normalised. Two different specs for one registry
// package ("x@1.0.0", "x@2.0.0") are an error naming both.
Result<std::vector<std::string>> normalize_npm_set(std::vector<std::string> specs);

}  // namespace lockroom::kits
