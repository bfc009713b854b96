// Sandbox and process wire types: params read with field-naming errors, results and notifications.
#include <catch2/catch.hpp>

#include "protocol/sandbox.h"

using namespace lockroom::protocol;

TEST_CASE("sandbox wire: sandbox/create reads every field", "[protocol][sandbox]") {
  json params = json::parse(R"({"resources":{"cpus":2,"memoryMiB":1024,"timeoutSeconds":60},
                                "kits":["node"],"env":{"A":"1"},"workspace":"/src"})");
  ParamReader reader(params);
  auto p = read_sandbox_create(reader);
  REQUIRE(reader.ok());
  CHECK(p.resources.cpus == 2);
  CHECK(p.resources.memory_mib == 1024);
  CHECK(p.resources.timeout_seconds == 60);
  CHECK_FALSE(p.resources.disk_mib.has_value());
  CHECK(p.kits == std::vector<std::string>{"node"});
  CHECK(p.env.at("A") == "1");
  REQUIRE(p.workspace);
  CHECK(p.workspace->path == "/src");
}

TEST_CASE("sandbox wire: bad fields are named with their path", "[protocol][sandbox]") {
  struct Case {
    const char* params;
    const char* message;
  };
  for (const Case& c : {
           Case{R"({"resources":{"cpus":"two"}})", R"(invalid params: "resources.cpus" must be an integer, got "two")"},
           Case{R"({"env":{"A":1}})", R"(invalid params: "env" must map names to strings, but "A" is 1)"},
           Case{R"({"kits":"node"})", R"(invalid params: "kits" must be an array of strings, got "node")"},
       }) {
    json params = json::parse(c.params);
    ParamReader reader(params);
    (void)read_sandbox_create(reader);
    REQUIRE_FALSE(reader.ok());
    CHECK(reader.error().code == rpc_error::kInvalidParams);
    CHECK(reader.error().message == c.message);
  }
}

TEST_CASE("sandbox wire: process/start requires a sandbox and a non-empty argv", "[protocol][process]") {
  {
    json params = json::parse(R"({"sandboxId":"sb-1","argv":[]})");
    ParamReader reader(params);
    (void)read_process_start(reader);
    REQUIRE_FALSE(reader.ok());
    CHECK_THAT(reader.error().message, Catch::StartsWith(R"(invalid params: "argv" must name a program)"));
  }
  {
    json params = json::parse(R"({"argv":["ls"]})");
    ParamReader reader(params);
    (void)read_process_start(reader);
    REQUIRE_FALSE(reader.ok());
    CHECK(reader.error().message == R"(invalid params: "sandboxId" is required)");
  }
  {
    json params = json::parse(R"({"sandboxId":"sb-1","argv":["sh","-c","ls"],"cwd":"/w","env":{"X":"y"},"pty":{"cols":100,"rows":30}})");
    ParamReader reader(params);
    auto p = read_process_start(reader);
    REQUIRE(reader.ok());
    CHECK(p.argv.size() == 3);
    CHECK(p.cwd == "/w");
    REQUIRE(p.pty.has_value());
    CHECK(p.pty->cols == 100);
    CHECK(p.pty->rows == 30);
  }
  {
    json params = json::parse(R"({"sandboxId":"sb-1","argv":["x"],"pty":{"cols":0,"rows":30}})");
    ParamReader reader(params);
    (void)read_process_start(reader);
    REQUIRE_FALSE(reader.ok());
    CHECK(reader.error().message == R"(invalid params: "pty.cols" must be between 1 and 1000, got 0)");
  }
}

TEST_CASE("sandbox wire: process/write decodes base64 and refuses bad encodings", "[protocol][process]") {
  {
    json params = json::parse(R"({"processId":"p-1","data":"aGk=","encoding":"base64"})");
    ParamReader reader(params);
    auto p = read_process_write(reader);
    REQUIRE(reader.ok());
    CHECK(p.data == "hi");
  }
  for (const char* bad : {R"({"processId":"p-1","data":"a","encoding":"base64"})", R"({"processId":"p-1","data":"aGk=","encoding":"latin1"})"}) {
    json params = json::parse(bad);
    ParamReader reader(params);
    (void)read_process_write(reader);
    CHECK_FALSE(reader.ok());
  }
}

TEST_CASE("sandbox wire: signals by name or number", "[protocol][process]") {
  for (auto [text, number] : {std::pair{R"("SIGINT")", 2}, std::pair{R"("TERM")", 15}, std::pair{"9", 9}}) {
    json params = json::parse(std::string(R"({"processId":"p-1","signal":)") + text + "}");
    ParamReader reader(params);
    auto p = read_process_signal(reader);
    REQUIRE(reader.ok());
    CHECK(p.signal == number);
  }
  json params = json::parse(R"({"processId":"p-1","signal":"SIGNOPE"})");
  ParamReader reader(params);
  (void)read_process_signal(reader);
  REQUIRE_FALSE(reader.ok());
  CHECK_THAT(reader.error().message, Catch::Contains("SIGNOPE"));
  CHECK(signal_name(9) == "SIGKILL");
}

TEST_CASE("sandbox wire: notifications have the documented shape", "[protocol][sandbox]") {
  CHECK(process_output_json("p-1", "stdout", "aGk=", true) ==
        json::parse(R"({"processId":"p-1","stream":"stdout","data":"aGk=","encoding":"base64"})"));
  CHECK(process_output_json("p-1", "stderr", "hi", false) == json::parse(R"({"processId":"p-1","stream":"stderr","data":"hi"})"));
  CHECK(process_exited_json("p-1", 3, std::nullopt) == json::parse(R"({"processId":"p-1","exitCode":3})"));
  CHECK(process_exited_json("p-1", std::nullopt, 9) == json::parse(R"({"processId":"p-1","signal":"SIGKILL","signalNumber":9})"));
  CHECK(state_changed_json("sb-1", "failed", "guestCrashed", "QEMU exited") ==
        json::parse(R"({"sandboxId":"sb-1","state":"failed","reason":"guestCrashed","message":"QEMU exited"})"));
}

TEST_CASE("sandbox wire: base64 decoding is strict", "[protocol][sandbox]") {
  CHECK(base64_decode("") == std::string());
  CHECK(base64_decode("Zm9vYmFy") == std::string("foobar"));
  CHECK(base64_decode("Zm8=") == std::string("fo"));
  CHECK(base64_decode("Zg==") == std::string("f"));
  CHECK_FALSE(base64_decode("Zg=").has_value());
  CHECK_FALSE(base64_decode("Z===").has_value());
  CHECK_FALSE(base64_decode("Zm9v!mFy").has_value());
  CHECK_FALSE(base64_decode("Zg==Zm9v").has_value());
}
