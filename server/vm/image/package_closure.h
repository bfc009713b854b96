// The Debian packages a kit asks for, as apt resolves them: the pure half of package images.
//
// package_image.h asks the host's apt for the dependency closure of a package set with a
// simulated install against an empty package database (`apt-get -s install` with
// Dir::State::status=/dev/null and no recommends/suggests), so apt's own resolver picks
// alternatives, virtual packages and versions, and no package of the host counts as installed.
// These functions normalise the set, read apt's answers (its "Inst" lines and errors,
// `apt-cache show` records), check the size bound and make the cache keys. Pure; no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/common/result.h"

namespace lockroom::vm::image {

// One package of a resolved closure.
struct PackageRef {
  std::string name;     // as apt prints it: "libjq1", or "libfoo:i386" for a foreign architecture
  std::string version;  // "1.6-2.1+deb12u3", with its epoch when it has one ("1:1.2.13.dfsg-1")
  std::string arch;     // "amd64", "all"
  friend bool operator==(const PackageRef&, const PackageRef&) = default;
};

// What `apt-cache show` says a package takes.
struct PackageSize {
  std::string name;
  std::string version;
  std::uint64_t installed_bytes = 0;  // Installed-Size (KiB in the record) in bytes
  std::uint64_t download_bytes = 0;   // Size of the .deb
};

constexpr std::size_t kMaxPackageSet = 256;        // names a set may hold (the kit spec's bound)
constexpr std::size_t kMaxPackageClosure = 2000;   // packages a closure may resolve to

// Sorted, without duplicates; each a Debian package name (optionally ":arch"). An empty set is
// valid (no layer). Errors name the offending entry.
Result<std::vector<std::string>> normalize_package_set(std::vector<std::string> packages);

// The closure from `apt-get -s install …` output and its exit status. apt's "E:" lines become an
// error naming the package that does not exist, has no candidate, or cannot be installed.
Result<std::vector<PackageRef>> parse_simulated_install(std::string_view output, int exit_code);

// The records of `apt-cache show NAME=VERSION…` (blank-line separated).
std::vector<PackageSize> parse_package_records(std::string_view output);

// Fails when the sizes add up to more than `limit` bytes, naming the total, the limit and the
// biggest packages (`what` says which size: "installed", "unpacked").
Result<void> check_package_sizes(const std::vector<PackageSize>& sizes, std::uint64_t limit, const std::string& what);

// "1:1.2.13-1" -> "1%3a1.2.13-1": how apt-get download names the file.
std::string deb_file_name(const PackageRef& ref);

// The package image's key: the base image, the set asked for, and every resolved version.
std::string package_image_key(const std::string& base_hash, const std::vector<std::string>& packages,
                              const std::vector<PackageRef>& closure);
// The key of a package set alone (for remembering apt's answer).
std::string package_set_key(const std::vector<std::string>& packages);

// Resolved closures as text (one "name version arch" per line) and back.
std::string closure_to_text(const std::vector<PackageRef>& closure);
Result<std::vector<PackageRef>> closure_from_text(std::string_view text);

// "jq, python3" (the first few, then "…").
std::string package_list_text(const std::vector<std::string>& packages, std::size_t most = 6);

}  // namespace lockroom::vm::image
