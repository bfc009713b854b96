// resolve_secret_values_async: the values come back on the loop; a failure names the secret.
#include <stdlib.h>

#include <catch2/catch.hpp>

#include "server/egress/engine/secret_resolution.h"
#include "tests/unit/uv_test_util.h"

using namespace lockroom::egress;

TEST_CASE("secret values are resolved off the loop and delivered on it", "[secrets]") {
  setenv("LOCKROOM_ENGINE_TEST_TOKEN", "  value-from-env\n", 1);
  auto secrets = parse_secrets(json::parse(R"([{"name":"token","from":{"env":"LOCKROOM_ENGINE_TEST_TOKEN"},"hosts":["a.example"]}])"));
  REQUIRE(secrets.ok());
  lockroom::testing::TestLoop loop;
  std::optional<lockroom::Result<SecretValues>> got;
  resolve_secret_values_async(loop.get(), secrets.value(), [&](lockroom::Result<SecretValues> values) { got.emplace(std::move(values)); });
  CHECK_FALSE(got.has_value());
  loop.run();
  REQUIRE(got.has_value());
  REQUIRE(got->ok());
  CHECK(got->value().at("token") == "value-from-env");

  unsetenv("LOCKROOM_ENGINE_TEST_TOKEN");
  std::optional<lockroom::Result<SecretValues>> missing;
  resolve_secret_values_async(loop.get(), secrets.value(), [&](lockroom::Result<SecretValues> values) { missing.emplace(std::move(values)); });
  loop.run();
  REQUIRE(missing.has_value());
  REQUIRE_FALSE(missing->ok());
  CHECK(missing->error().message.find("token") != std::string::npos);
  CHECK(loop.finish() == 0);
}
