// Small parts of the ACP face: a terminal's output kept to its byte limit at a character
// boundary, fs/read_text_file's line and limit, and the sandbox `lockroom acp` asks for.
#include <catch2/catch.hpp>

#include "server/acp/acp_options.h"
#include "server/acp/guest_files.h"
#include "server/acp/guest_terminals.h"

using namespace lockroom::acp;
using nlohmann::json;

TEST_CASE("acp terminals: output over the limit loses its oldest bytes, never half a character", "[acp]") {
  std::string text = "abcdef";
  CHECK_FALSE(keep_tail(text, 6));
  CHECK(text == "abcdef");
  CHECK(keep_tail(text, 4));
  CHECK(text == "cdef");
  std::string accents = "x\xc3\xa9\xc3\xa9";  // x é é: 5 bytes
  CHECK(keep_tail(accents, 3));                // cutting 2 bytes would split the first é
  CHECK(accents == "\xc3\xa9");
  std::string empty_tail = "\xe2\x82\xac";  // €
  CHECK(keep_tail(empty_tail, 1));
  CHECK(empty_tail.empty());
}

TEST_CASE("acp files: line and limit select whole lines, 1-based", "[acp]") {
  std::string text = "one\ntwo\nthree\nfour";
  CHECK(select_lines(text, std::nullopt, std::nullopt) == text);
  CHECK(select_lines(text, 2, std::nullopt) == "two\nthree\nfour");
  CHECK(select_lines(text, 2, 2) == "two\nthree\n");
  CHECK(select_lines(text, std::nullopt, 1) == "one\n");
  CHECK(select_lines(text, 4, 10) == "four");
  CHECK(select_lines(text, 9, 1) == "");
  CHECK(select_lines(text, 1, 0) == "");
}

TEST_CASE("acp options: the sandbox asked for each session", "[acp]") {
  AcpOptions options;
  options.argv = {"/usr/local/bin/claude-agent-acp", "--verbose"};
  options.kits = {"claude"};
  options.allow = {"pypi.org", "files.example.com:8443", "[2001:db8::1]:443", "::1", "127.0.0.1:45233"};
  options.secrets = {"GITHUB_TOKEN=api.github.com,uploads.github.com"};
  options.env = {{"CI", "1"}};
  std::string cwd = "/home/ada/proj";
  json p = create_params(options, &cwd);
  CHECK(p["workspace"] == json{{"path", "/home/ada/proj"}});
  CHECK(p["kits"] == json::array({"claude"}));
  CHECK(p["env"]["CI"] == "1");
  CHECK(p["resources"]["timeoutSeconds"] == 7 * 24 * 3600);
  CHECK(p["label"] == "acp: claude-agent-acp in proj");
  const json& rules = p["network"]["rules"];
  REQUIRE(rules.size() == 5);
  CHECK(rules[0]["host"] == "pypi.org");
  CHECK_FALSE(rules[0].contains("ports"));
  CHECK(rules[1]["host"] == "files.example.com");
  CHECK(rules[1]["ports"] == json::array({8443}));
  CHECK(rules[2]["host"] == "[2001:db8::1]");
  CHECK(rules[2]["ports"] == json::array({443}));
  CHECK(rules[3]["host"] == "::1");
  CHECK(rules[4]["host"] == "127.0.0.1");
  CHECK(rules[4]["ports"] == json::array({45233}));
  CHECK(p["network"]["unmatched"] == "ask");
  CHECK(p["secrets"][0] == json{{"name", "GITHUB_TOKEN"}, {"from", {{"env", "GITHUB_TOKEN"}}},
                                {"hosts", {"api.github.com", "uploads.github.com"}}, {"inject", "sentinel"}});

  options.no_network = true;
  options.resources = {{"timeoutSeconds", 60}};
  json none = create_params(options, nullptr);
  CHECK(none["network"] == false);
  CHECK_FALSE(none.contains("workspace"));
  CHECK_FALSE(none.contains("secrets"));
  CHECK(none["resources"]["timeoutSeconds"] == 60);
}
