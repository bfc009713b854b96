// `--upstream-ca FILE` on `lockroom serve` and `lockroom run`, through the real binary: a file
// that does not exist is refused at start-up with an error naming the option and the file (and
// nothing starts: no state dir, no sandbox); files that exist are taken, as many as given. That
// the files then reach each sandbox's proxy is tests/integration/test_sandbox_upstream_ca.cpp.
//
// Every run gets a state and cache dir of its own (LOCKROOM_STATE_DIR, LOCKROOM_CACHE_DIR) and
// is bounded by timeout(1), so a regression that starts a sandbox fails fast instead of booting.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "server/common/subprocess.h"
#include "tests/support/temp_dir.h"

using lockroom::testing::TempDir;
namespace fs = std::filesystem;

namespace {

constexpr const char* kTimeoutSeconds = "30";
constexpr int kTimedOut = 124;  // timeout(1)'s exit status when it had to stop the command

// Runs `lockroom ARGS...` with stdin at end of input and the state and cache under `home`;
// returns its exit status and its stdout and stderr together.
lockroom::ProcessOutput run_lockroom(const TempDir& home, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"env", "LOCKROOM_STATE_DIR=" + (home / "state").string(),
                                   "LOCKROOM_CACHE_DIR=" + (home / "cache").string(), "timeout", kTimeoutSeconds,
                                   LOCKROOM_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  auto ran = lockroom::run_capture(argv);
  INFO((ran ? std::string() : ran.error().message));
  REQUIRE(ran);
  return *ran;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("serve --upstream-ca: a file that does not exist is refused, naming the option and the file", "[cli][upstream-ca]") {
  TempDir home{"lockroom-cli"};
  fs::path missing = home / "no-such-ca.pem";
  auto ran = run_lockroom(home, {"serve", "--stdio", "--upstream-ca", missing.string()});
  INFO(ran.output);
  CHECK(ran.exit_code != 0);
  CHECK(ran.exit_code != kTimedOut);
  CHECK(contains(ran.output, "--upstream-ca"));
  CHECK(contains(ran.output, missing.string()));
  CHECK_FALSE(fs::exists(home / "state"));  // refused before the server started
}

TEST_CASE("run --upstream-ca: a file that does not exist is refused before a sandbox is made", "[cli][upstream-ca]") {
  TempDir home{"lockroom-cli"};
  fs::path missing = home / "corporate" / "ca.pem";
  auto ran = run_lockroom(home, {"run", "--no-workspace", "--upstream-ca", missing.string(), "--", "true"});
  INFO(ran.output);
  CHECK(ran.exit_code != 0);
  CHECK(ran.exit_code != kTimedOut);
  CHECK(contains(ran.output, "--upstream-ca"));
  CHECK(contains(ran.output, missing.string()));
  CHECK_FALSE(fs::exists(home / "state"));
  CHECK_FALSE(fs::exists(home / "cache"));  // no image was looked for
}

TEST_CASE("serve --upstream-ca: files that exist are taken, the option repeats", "[cli][upstream-ca]") {
  TempDir home{"lockroom-cli"};
  // serve reads the files only when a sandbox's proxy starts; existence is what start-up checks.
  fs::path first = home.write("first-ca.pem", "-----BEGIN CERTIFICATE-----\n");
  fs::path second = home.write("second-ca.pem", "-----BEGIN CERTIFICATE-----\n");
  // The editor is gone at once (stdin is at end of input): serve ends the same way with or
  // without the option, and says nothing about it.
  auto plain = run_lockroom(home, {"serve", "--stdio", "--test-mode"});
  auto with_cas = run_lockroom(home, {"serve", "--stdio", "--test-mode", "--upstream-ca", first.string(), "--upstream-ca", second.string()});
  INFO("without: " << plain.output << "\nwith: " << with_cas.output);
  CHECK(plain.exit_code != kTimedOut);
  CHECK(with_cas.exit_code == plain.exit_code);
  CHECK_FALSE(contains(with_cas.output, "upstream-ca"));
  CHECK_FALSE(contains(with_cas.output, "first-ca.pem"));
}
