// The one SandboxManager world of the sandbox integration tests, and their Catch2 main.
#define CATCH_CONFIG_MAIN
#include "tests/integration/sandbox_world.h"

#include <spdlog/spdlog.h>

namespace lockroom::testing {

World& world() {
  static World* w = [] {
    spdlog::set_level(spdlog::level::warn);
    return new World();
  }();
  return *w;
}

}  // namespace lockroom::testing
