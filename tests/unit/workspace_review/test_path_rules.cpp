// Path and symlink-target rules for guest-reported paths.
#include <catch2/catch.hpp>

#include "server/workspace/review/path_rules.h"

using namespace lockroom::workspace::review;

TEST_CASE("path_problem accepts ordinary relative paths", "[path_rules]") {
  for (const char* ok : {"a", "src/main.c", "dir with spaces/file name.txt", "résumé/naïve.md", "日本/語.txt",
                         ".gitignore", ".github/workflows/ci.yml", "a/.gitmodules", "git", "x.git", ".gitx",
                         "a/b/c/d/e", "..a", "a..", "...", "a:b",
                         "back\\slash.txt", "dir\\/x"}) {  // a backslash is an ordinary byte on Linux and macOS
    INFO(ok);
    CHECK_FALSE(path_problem(ok).has_value());
  }
}

TEST_CASE("path_problem refuses escapes, git's directory and malformed names", "[path_rules]") {
  struct Case {
    std::string path;
    const char* reason_part;
  };
  std::vector<Case> cases = {
      {"", "empty"},
      {"/etc/passwd", "absolute"},
      {"../x", "'..'"},
      {"a/../../b", "'..'"},
      {"./a", "'.'"},
      {"a//b", "empty component"},
      {"a/", "empty component"},
      {std::string("a\0b", 3), "NUL"},
      {"a\nb", "control"},
      {"Icon\r", "control"},
      {"tab\there", "control"},
      {"a\x7f", "control"},
      {"bad\xff\xfe", "UTF-8"},
      {"overlong\xc0\xaf", "UTF-8"},
      {"surrogate\xed\xa0\x80", "UTF-8"},
      {".git/hooks/pre-commit", "git's own directory"},
      {".GIT/config", "git's own directory"},
      {"sub/.Git/HEAD", "git's own directory"},
      {".git. . /x", "git's own directory"},
      {".git::$INDEX_ALLOCATION/x", "git's own directory"},
      {"GIT~1/config", "git's own directory"},
      {".g\xe2\x80\x8cit/config", "git's own directory"},  // U+200C (HFS+ ignores it)
      {"\xef\xbb\xbf.git/config", "git's own directory"},  // U+FEFF
      {std::string(256, 'a'), "component"},
      {std::string(2100, 'a') + "/" + std::string(2100, 'b'), "4096"},
  };
  for (const Case& c : cases) {
    INFO(printable(c.path));
    auto problem = path_problem(c.path);
    REQUIRE(problem.has_value());
    CHECK_THAT(*problem, Catch::Contains(c.reason_part));
  }
}

TEST_CASE("symlink targets may stay inside the workspace only", "[path_rules]") {
  CHECK_FALSE(symlink_target_problem("link", "target.txt"));
  CHECK_FALSE(symlink_target_problem("a/b/link", "../../c/d"));
  CHECK_FALSE(symlink_target_problem("a/link", "./sibling"));
  CHECK_FALSE(symlink_target_problem("a/link", ".."));  // the workspace root itself

  CHECK_THAT(*symlink_target_problem("link", "/etc"), Catch::Contains("absolute"));
  CHECK_THAT(*symlink_target_problem("link", ".."), Catch::Contains("outside"));
  CHECK_THAT(*symlink_target_problem("a/b/link", "../../../x"), Catch::Contains("outside"));
  CHECK_THAT(*symlink_target_problem("link", "d/../x"), Catch::Contains("after a directory"));
  CHECK_THAT(*symlink_target_problem("link", ".git/hooks"), Catch::Contains("git's own"));
  CHECK_THAT(*symlink_target_problem(".g/link", "../.GIT"), Catch::Contains("git's own"));
  CHECK_THAT(*symlink_target_problem("link", ""), Catch::Contains("empty"));
}

TEST_CASE("printable escapes what a terminal or log should not see raw", "[path_rules]") {
  CHECK(printable("plain/path é") == "plain/path é");
  CHECK(printable(std::string("a\0b\n\xff", 5)) == "a\\x00b\\x0a\\xff");
  CHECK(printable(std::string(500, 'x'), 10).size() == 13);
}
