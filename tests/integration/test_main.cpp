// Catch2 runner for the integration tests (real QEMU guests). Logs are quiet; tests assert on results.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
