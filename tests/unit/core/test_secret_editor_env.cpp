// Secrets `from: {env: NAME}` under a shared server (server/serve/): read from the editor's
// environment (the one the `serve --stdio` bridge sent in its hello, SecretSource::environment),
// never from the server's own, which belongs to whichever bridge started it.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "server/egress/policy/secret_source.h"

using namespace lockroom;

TEST_CASE("secrets: with the editor's environment given, env secrets are read there and only there", "[secrets][shared-server]") {
  ::setenv("LOCKROOM_TEST_SERVER_ONLY", "server-value", 1);
  egress::Secret secret;
  secret.name = "token";
  secret.from.kind = egress::SecretSource::Kind::kEnv;
  secret.from.env = "LOCKROOM_TEST_SERVER_ONLY";
  CHECK(egress::resolve_secret_value(secret).value() == "server-value");  // standalone: this process's

  secret.from.environment = std::make_shared<const std::map<std::string, std::string>>(
      std::map<std::string, std::string>{{"LOCKROOM_TEST_EDITOR_ONLY", " editor-value \n"}});
  auto missing = egress::resolve_secret_value(secret);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message == "secret token: environment variable LOCKROOM_TEST_SERVER_ONLY of the editor is not set");

  secret.from.env = "LOCKROOM_TEST_EDITOR_ONLY";
  CHECK(egress::resolve_secret_value(secret).value() == "editor-value");
  ::unsetenv("LOCKROOM_TEST_SERVER_ONLY");
}
