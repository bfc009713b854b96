// Reading secret values on the host: environment, files and commands (with a timeout that kills
// the whole process group), trimmed and checked; errors never carry the value.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>

#include "server/egress/policy/secret_source.h"
#include "tests/support/temp_dir.h"

using namespace lockroom::egress;
using lockroom::testing::TempDir;

namespace {
Secret secret_from(const json& from) {
  auto secret = parse_secret({{"name", "tok"}, {"from", from}, {"hosts", {"a.example"}}}, "secret");
  INFO(from.dump() << (secret ? "" : secret.error().message));
  REQUIRE(secret.ok());
  return *secret;
}
}  // namespace

TEST_CASE("a secret value from an environment variable") {
  setenv("LOCKROOM_TEST_SECRET_ENV", "  env-value-123\n", 1);
  auto value = resolve_secret_value(secret_from({{"env", "LOCKROOM_TEST_SECRET_ENV"}}));
  REQUIRE(value.ok());
  CHECK(*value == "env-value-123");
  unsetenv("LOCKROOM_TEST_SECRET_ENV");
  auto missing = resolve_secret_value(secret_from({{"env", "LOCKROOM_TEST_SECRET_ENV"}}));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message == "secret tok: environment variable LOCKROOM_TEST_SECRET_ENV is not set");
  setenv("LOCKROOM_TEST_SECRET_ENV", "two\nlines", 1);
  auto lines = resolve_secret_value(secret_from({{"env", "LOCKROOM_TEST_SECRET_ENV"}}));
  REQUIRE_FALSE(lines.ok());
  CHECK(lines.error().message.find("two") == std::string::npos);
  unsetenv("LOCKROOM_TEST_SECRET_ENV");
}

TEST_CASE("a secret value from a file") {
  TempDir dir;
  auto file = dir.write("token", "file-value-456\n");
  auto value = resolve_secret_value(secret_from({{"file", file.string()}}));
  REQUIRE(value.ok());
  CHECK(*value == "file-value-456");
  auto empty = resolve_secret_value(secret_from({{"file", dir.write("empty", " \n").string()}}));
  REQUIRE_FALSE(empty.ok());
  CHECK_THAT(empty.error().message, Catch::Contains("is empty"));
  auto absent = resolve_secret_value(secret_from({{"file", (dir.path() / "absent").string()}}));
  REQUIRE_FALSE(absent.ok());
  CHECK_THAT(absent.error().message, Catch::Contains("cannot open file"));
  auto big = resolve_secret_value(secret_from({{"file", dir.write("big", std::string(70 * 1024, 'x')).string()}}));
  REQUIRE_FALSE(big.ok());
  CHECK_THAT(big.error().message, Catch::Contains("larger than 64 KiB"));
}

TEST_CASE("a secret value from a command, with its exit status and timeout") {
  auto value = resolve_secret_value(secret_from({{"command", {"printf", "  cmd-value-789\\n"}}}));
  REQUIRE(value.ok());
  CHECK(*value == "cmd-value-789");

  auto failed = resolve_secret_value(secret_from({{"command", {"sh", "-c", "echo leaked-value; exit 3"}}}));
  REQUIRE_FALSE(failed.ok());
  CHECK_THAT(failed.error().message, Catch::Contains("exit status 3"));
  CHECK(failed.error().message.find("leaked-value") == std::string::npos);

  auto absent = resolve_secret_value(secret_from({{"command", {"lockroom-no-such-program-here"}}}));
  REQUIRE_FALSE(absent.ok());
  CHECK_THAT(absent.error().message, Catch::Contains("cannot run command"));

  // A command that outlives its timeout is killed with everything it started.
  auto start = std::chrono::steady_clock::now();
  auto slow = resolve_secret_value(secret_from({{"command", {"sh", "-c", "sleep 30 & sleep 30"}}, {"timeoutMs", 200}}));
  auto took = std::chrono::steady_clock::now() - start;
  REQUIRE_FALSE(slow.ok());
  CHECK_THAT(slow.error().message, Catch::Contains("did not finish within 200 ms"));
  CHECK(took < std::chrono::seconds(5));

  // Output that never ends is cut at the bound.
  auto endless = resolve_secret_value(secret_from({{"command", {"yes"}}, {"timeoutMs", 5000}}));
  REQUIRE_FALSE(endless.ok());
  CHECK_THAT(endless.error().message, Catch::Contains("more than 64 KiB"));
}

TEST_CASE("all values of a list, or the first error") {
  setenv("LOCKROOM_TEST_SECRET_A", "a-value", 1);
  auto secrets = parse_secrets({{{"name", "a"}, {"from", {{"env", "LOCKROOM_TEST_SECRET_A"}}}, {"hosts", {"a.example"}}},
                                {{"name", "b"}, {"from", {{"command", {"echo", "b-value"}}}}, {"hosts", {"b.example"}}}});
  REQUIRE(secrets.ok());
  auto values = resolve_secret_values(*secrets);
  REQUIRE(values.ok());
  CHECK(*values == SecretValues{{"a", "a-value"}, {"b", "b-value"}});
  unsetenv("LOCKROOM_TEST_SECRET_A");
  CHECK_FALSE(resolve_secret_values(*secrets).ok());
}
