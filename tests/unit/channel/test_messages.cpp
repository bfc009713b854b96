// The agent's message set: JSON both ways, validation that names the field, base64, signals.
#include <catch2/catch.hpp>

#include <csignal>
#include <vector>

#include "protocol/channel/base64.h"
#include "protocol/channel/messages.h"

namespace wire = lockroom::protocol::channel;
using lockroom::protocol::json;

TEST_CASE("messages: base64 round trips and rejects non-canonical text", "[channel][messages]") {
  for (const std::string& s : std::vector<std::string>{"", "f", "fo", "foo", "foob", "fooba", "foobar", std::string("\0\xff\x10", 3)}) {
    auto back = wire::base64_decode(wire::base64_encode(s));
    REQUIRE(back);
    CHECK(*back == s);
  }
  CHECK(wire::base64_encode("foobar") == "Zm9vYmFy");
  CHECK_FALSE(wire::base64_decode("Zm9"));
  CHECK_FALSE(wire::base64_decode("Zm9v!mFy"));
  CHECK_FALSE(wire::base64_decode("Zh=="));  // non-zero bits under the padding
  CHECK_FALSE(wire::base64_decode("=AAA"));
}

TEST_CASE("messages: process.start params round trip and are validated", "[channel][messages]") {
  wire::ProcessStartParams p;
  p.argv = {"sh", "-c", "echo hi"};
  p.cwd = "/tmp";
  p.env = {{"LANG", "C.UTF-8"}, {"DEBUG", std::nullopt}};
  p.pty = wire::TerminalSize{120, 40};
  p.max_processes = 64;
  auto back = wire::parse_process_start_params(wire::to_json(p));
  REQUIRE(back);
  CHECK(back->argv == p.argv);
  CHECK(back->cwd == p.cwd);
  CHECK(back->env.size() == 2);
  CHECK(back->pty->cols == 120);
  CHECK(back->max_processes == 64);

  auto error = [](const json& j) {
    auto r = wire::parse_process_start_params(j);
    return r ? std::string("(ok)") : r.error().message;
  };
  CHECK(error(json{{"argv", json::array()}}) == "\"argv\" must not be empty: it names the program to run");
  CHECK(error(json{{"argv", {"sh", 3}}}) == "\"argv\" must be an array of strings, but item 1 is 3");
  CHECK_THAT(error(json{{"argv", {std::string("a\0b", 3)}}}), Catch::Contains("NUL byte"));
  CHECK_THAT(error(json{{"argv", {"sh"}}, {"env", {{"A=B", "x"}}}}), Catch::Contains("names must be non-empty and hold no '='"));
  CHECK_THAT(error(json{{"argv", {"sh"}}, {"env", {{"A", 1}}}}), Catch::Contains("\"env.A\" must be a string or null"));
  CHECK_THAT(error(json{{"argv", {"sh"}}, {"pty", {{"cols", 0}, {"rows", 10}}}}), Catch::Contains("\"pty.cols\" must be between 1 and 4096"));
  CHECK_THAT(error(json{{"argv", {"sh"}}, {"limits", {{"maxProcesses", 0}}}}), Catch::Contains("\"limits.maxProcesses\""));
}

TEST_CASE("messages: replies from the agent are checked like requests", "[channel][messages]") {
  auto start = wire::parse_process_start_result(json{{"pid", 12}, {"streams", {{"stdin", 2}, {"stdout", 2}, {"stderr", 6}}}}, false);
  REQUIRE_FALSE(start);
  CHECK_THAT(start.error().message, Catch::Contains("must differ"));
  CHECK_FALSE(wire::parse_process_start_result(json{{"pid", -1}, {"streams", {{"pty", 2}}}}, true));
  CHECK(wire::parse_process_start_result(json{{"pid", 7}, {"streams", {{"pty", 2}}}}, true));

  CHECK_FALSE(wire::parse_process_exited(json{{"pid", 7}}));
  CHECK_FALSE(wire::parse_process_exited(json{{"pid", 7}, {"exitCode", 0}, {"signal", 9}}));
  auto exited = wire::parse_process_exited(wire::to_json(wire::ProcessExited{7, std::nullopt, SIGKILL, false}));
  REQUIRE(exited);
  CHECK(exited->signal == SIGKILL);

  auto list = wire::parse_file_list_result(json{{"entries", {{{"name", "../etc"}, {"type", "file"}, {"size", 1}, {"mode", 420}}}}, {"truncated", false}});
  REQUIRE_FALSE(list);
  CHECK_THAT(list.error().message, Catch::Contains("\"entries[0].name\" must be a single path component"));

  auto read = wire::parse_file_read_result(json{{"data", "!!!!"}, {"size", 3}, {"eof", true}}, false);
  REQUIRE_FALSE(read);
  CHECK_THAT(read.error().message, Catch::Contains("\"data\" is not valid base64"));

  auto hello = wire::parse_hello_result(json{{"protocol", 1}, {"agentVersion", "x"}, {"pid", 1}, {"processLimit", "magic"},
                                             {"maxFrame", 65536}, {"streamWindow", 262144}, {"maxStreams", 16}, {"maxControl", 1 << 20}});
  REQUIRE_FALSE(hello);
  CHECK_THAT(hello.error().message, Catch::Contains("\"processLimit\" must be \"cgroup\" or \"rlimit\""));
}

TEST_CASE("messages: guest.resume needs enough entropy", "[channel][messages]") {
  wire::ResumeParams p{1764488000000000000LL, std::string(32, '\x42')};
  auto back = wire::parse_resume_params(wire::to_json(p));
  REQUIRE(back);
  CHECK(back->entropy == p.entropy);
  CHECK(back->unix_time_ns == p.unix_time_ns);
  auto short_one = wire::parse_resume_params(json{{"unixTimeNs", 1}, {"entropy", wire::base64_encode("tiny")}});
  REQUIRE_FALSE(short_one);
  CHECK(short_one.error().message == "\"entropy\" holds 4 bytes; at least 32 are needed");
  auto huge = wire::parse_resume_params(json{{"unixTimeNs", 1}, {"entropy", wire::base64_encode(std::string(5000, 'e'))}});
  REQUIRE_FALSE(huge);
  CHECK_THAT(huge.error().message, Catch::Contains("holds more than 4096 bytes"));
}

TEST_CASE("messages: file params keep their bounds", "[channel][messages]") {
  CHECK_FALSE(wire::parse_file_read_params(json{{"path", "/x"}, {"length", 1 << 20}}));
  auto write = wire::parse_file_write_params(json{{"path", "/x"}, {"data", wire::base64_encode(std::string(300000, 'w'))}});
  REQUIRE_FALSE(write);
  CHECK_THAT(write.error().message, Catch::Contains("holds more than 262144 bytes"));
  CHECK(wire::parse_file_write_params(json{{"path", "/x"}, {"stream", true}}));
  CHECK_FALSE(wire::parse_file_write_params(json{{"path", "/x"}, {"data", ""}, {"mode", 010000}}));
  CHECK_FALSE(wire::parse_file_stat_params(json{{"path", ""}}));
  CHECK_FALSE(wire::parse_file_list_params(json{{"path", "/"}, {"limit", 100000}}));
}

TEST_CASE("messages: signals by number or name", "[channel][messages]") {
  CHECK(wire::parse_process_signal_params(json{{"pid", 5}, {"signal", "TERM"}})->signal == SIGTERM);
  CHECK(wire::parse_process_signal_params(json{{"pid", 5}, {"signal", "SIGKILL"}})->signal == SIGKILL);
  CHECK(wire::parse_process_signal_params(json{{"pid", 5}, {"signal", 2}})->signal == 2);
  auto bad = wire::parse_process_signal_params(json{{"pid", 5}, {"signal", "NOPE"}});
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("a signal number (1-64) or a name such as \"TERM\""));
  CHECK(wire::signal_name(SIGWINCH) == "WINCH");
}
