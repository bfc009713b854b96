// The bridge's handshake (server/serve/hello.h): the hello and the welcome round-trip, a bad
// hello is refused naming the field, and the end record is found after the NUL.
#include <catch2/catch.hpp>

#include "server/serve/hello.h"

using namespace lockroom;

TEST_CASE("hello: what the bridge sends is what the server reads", "[hello]") {
  serve::Hello hello;
  hello.framing = rpc::FramingKind::kNdjson;
  hello.max_message_bytes = 4096;
  hello.pid = 42;
  hello.env = {{"API_TOKEN", "s3cret \"quoted\""}, {"EMPTY", ""}};
  std::string line = serve::hello_line(hello);
  REQUIRE(line.back() == '\n');
  CHECK(line.find('\n') == line.size() - 1);  // one line, whatever the environment holds
  auto read = serve::read_hello(std::string_view(line).substr(0, line.size() - 1));
  REQUIRE(read);
  CHECK(read->framing == rpc::FramingKind::kNdjson);
  CHECK(read->max_message_bytes == 4096);
  CHECK(read->pid == 42);
  CHECK(read->env == hello.env);
}

TEST_CASE("hello: a bad hello is refused, naming what is wrong", "[hello]") {
  CHECK(serve::read_hello("not json").error().message.find("not a JSON object") != std::string::npos);
  CHECK(serve::read_hello(R"({"lockroomHello":2})").error().message.find("lockroomHello") != std::string::npos);
  CHECK(serve::read_hello(R"({"lockroomHello":1,"framing":"xml"})").error().message.find("framing") != std::string::npos);
  CHECK(serve::read_hello(R"({"lockroomHello":1,"env":{"A":1}})").error().message.find("env.A") != std::string::npos);
  CHECK(serve::read_hello(R"({"lockroomHello":1,"maxMessageBytes":10})").error().message.find("maxMessageBytes") != std::string::npos);
}

TEST_CASE("hello: the welcome, a refusal, and the end record", "[hello]") {
  auto welcome = serve::read_welcome(serve::welcome_line(serve::Welcome{77, "/tmp/x.log"}));
  REQUIRE(welcome);
  CHECK(welcome->pid == 77);
  CHECK(welcome->log == "/tmp/x.log");
  auto refused = serve::read_welcome(serve::refusal_line("go away"));
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message.find("go away") != std::string::npos);

  std::string record = serve::end_record(0);
  REQUIRE(record[0] == '\0');
  CHECK(serve::read_end_record(std::string_view(record).substr(1)) == 0);
  CHECK(serve::read_end_record("exit 1\n") == 1);
  CHECK_FALSE(serve::read_end_record("exit 1").has_value());  // not complete yet
  CHECK_FALSE(serve::read_end_record("exot 1\n").has_value());
}
