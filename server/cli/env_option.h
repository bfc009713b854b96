// `-e/--env NAME=VALUE` options, read into an environment map the same way by every command
// that takes them (`run`, `acp`).
#pragma once

#include <iostream>
#include <map>
#include <string>
#include <vector>

namespace lockroom::cli {

// Adds each NAME=VALUE to `env`; false (after saying which on stderr) when one is not of that form.
inline bool read_env_options(const std::vector<std::string>& items, std::map<std::string, std::string>& env) {
  for (const auto& item : items) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "lockroom: --env wants NAME=VALUE, got \"" << item << "\"\n";
      return false;
    }
    env[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return true;
}

}  // namespace lockroom::cli
