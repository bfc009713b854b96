// pack_npm_package(): a tiny npm package made for a test and packed with the host's own
// `npm pack` (no registry, no network): a package.json with one program in `bin` and that
// program's script. Installing the tarball by its path (`file:/…/NAME-1.0.0.tgz`) is as real an
// `npm install` as one from a registry, and works offline.
#pragma once

#include <filesystem>
#include <fstream>
#include <vector>
#include <string>

#include <catch2/catch.hpp>

#include "tests/support/shell.h"
#include "tests/support/temp_dir.h"

namespace lockroom::testing {

struct NpmProgram {
  std::string name;    // the bin name
  std::string path;    // inside the package, "bin/hello.js"
  std::string script;  // its text, with its #! line
};

// Packs NAME@1.0.0 with `programs` into the folder `out` and returns the tarball's path. The
// same input gives the same bytes (npm pack fixes the entries' times).
inline std::filesystem::path pack_npm_package(const std::filesystem::path& out, const std::string& name, const std::vector<NpmProgram>& programs) {
  auto write = [&](const std::string& relative, const std::string& content) {
    std::filesystem::create_directories((out / relative).parent_path());
    std::ofstream(out / relative, std::ios::binary | std::ios::trunc) << content;
  };
  std::string bins;
  for (const auto& p : programs) {
    bins += std::string(bins.empty() ? "" : ", ") + "\"" + p.name + "\": \"" + p.path + "\"";
    write("src-" + name + "/" + p.path, p.script);
  }
  write("src-" + name + "/package.json", "{\"name\": \"" + name + "\", \"version\": \"1.0.0\", \"description\": \"a lockroom test package\", "
                                             "\"license\": \"MIT\", \"bin\": {" + bins + "}}\n");
  std::string file = sh("cd '" + (out / ("src-" + name)).string() + "' && npm pack --silent --pack-destination '" + out.string() + "'");
  while (!file.empty() && (file.back() == '\n' || file.back() == '\r')) file.pop_back();
  std::filesystem::path tarball = out / file;
  INFO("npm pack printed: " << file);
  REQUIRE(std::filesystem::is_regular_file(tarball));
  return tarball;
}
inline std::filesystem::path pack_npm_package(const TempDir& out, const std::string& name, const std::vector<NpmProgram>& programs) {
  return pack_npm_package(out.path(), name, programs);
}

}  // namespace lockroom::testing
