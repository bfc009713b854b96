// The pure parts of `lockroom diff` / `lockroom apply`: which paths a pathspec selects, git's
// colours on a unified diff, the diffstat, and text fields that arrive as base64.
#include <catch2/catch.hpp>

#include "protocol/channel/base64.h"
#include "server/api/control_review.h"

using namespace lockroom;
using namespace lockroom::api;

TEST_CASE("a pathspec selects the file itself and everything under a folder, nothing else", "[control]") {
  CHECK(path_selected("src/app.c", {}));
  CHECK(path_selected("src/app.c", {"src/app.c"}));
  CHECK(path_selected("src/app.c", {"src"}));
  CHECK(path_selected("src/app.c", {"src/"}));
  CHECK(path_selected("src/app.c", {"./src"}));
  CHECK(path_selected("src/app.c", {"."}));
  CHECK_FALSE(path_selected("src/app.c", {"sr"}));
  CHECK_FALSE(path_selected("src2/app.c", {"src"}));
  CHECK_FALSE(path_selected("src", {"src/app.c"}));
  CHECK(path_selected("b.txt", {"a.txt", "b.txt"}));
}

TEST_CASE("colours follow git: meta bold, hunk header cyan, additions green, removals red", "[control]") {
  std::string patch =
      "diff --git a/f.txt b/f.txt\n"
      "index 1111111..2222222 100644\n"
      "--- a/f.txt\n"
      "+++ b/f.txt\n"
      "@@ -1,3 +1,3 @@ int main\n"
      " a\n"
      "--- removed line that starts with two dashes\n"
      "+++added line that starts with pluses\n"
      "\\ No newline at end of file\n";
  std::string c = colorize_patch(patch);
  CHECK(c.find("\x1b[1mdiff --git a/f.txt b/f.txt\x1b[m\n") != std::string::npos);
  CHECK(c.find("\x1b[1m--- a/f.txt\x1b[m\n") != std::string::npos);
  CHECK(c.find("\x1b[1m+++ b/f.txt\x1b[m\n") != std::string::npos);
  CHECK(c.find("\x1b[36m@@ -1,3 +1,3 @@\x1b[m int main\n") != std::string::npos);
  CHECK(c.find("\n a\n") != std::string::npos);
  CHECK(c.find("\x1b[31m--- removed line that starts with two dashes\x1b[m\n") != std::string::npos);
  CHECK(c.find("\x1b[32m+++added line that starts with pluses\x1b[m\n") != std::string::npos);
  CHECK(c.find("\n\\ No newline at end of file\n") != std::string::npos);
  // Without the escapes it is the same text.
  std::string plain = c;
  for (const char* esc : {"\x1b[1m", "\x1b[36m", "\x1b[31m", "\x1b[32m", "\x1b[m"})
    for (std::size_t at; (at = plain.find(esc)) != std::string::npos;) plain.erase(at, std::string(esc).size());
  CHECK(plain == patch);
  // A second file's header is meta again.
  CHECK(colorize_patch(patch + "diff --git a/g b/g\n--- a/g\n").find("\x1b[1m--- a/g\x1b[m") != std::string::npos);
}

TEST_CASE("the diffstat looks like git's, with bars scaled to the widest change", "[control]") {
  std::vector<StatLine> lines = {{"README.md", 1, 1, false}, {"old.txt => new name.txt", 3, 0, false}, {"logo.png", 0, 0, true}};
  CHECK(format_diffstat(lines, false) ==
        " README.md               | 2 +-\n"
        " old.txt => new name.txt | 3 +++\n"
        " logo.png                | Bin\n"
        " 3 files changed, 4 insertions(+), 1 deletion(-)\n");
  std::string big = format_diffstat({{"big", 300, 100, false}, {"small", 1, 0, false}}, false, 40);
  CHECK(big.find(" big   | 400 " + std::string(30, '+') + std::string(10, '-') + "\n") != std::string::npos);
  CHECK(big.find(" small |   1 +\n") != std::string::npos);  // the smallest change still shows
  CHECK(format_diffstat({{"a", 0, 2, false}}, false).find("1 file changed, 2 deletions(-)\n") != std::string::npos);
  CHECK(format_diffstat({{"mode-only", 0, 0, false}}, false).find("0 insertions(+), 0 deletions(-)") != std::string::npos);
  CHECK(format_diffstat({{"a", 1, 1, false}}, true) == " a | 2 \x1b[32m+\x1b[m\x1b[31m-\x1b[m\n 1 file changed, 1 insertion(+), 1 deletion(-)\n");
}

TEST_CASE("text fields are decoded from base64 when the answer says so", "[control]") {
  std::string bytes("caf\xe9\n", 5);  // not UTF-8: the server sends it as base64
  protocol::json j{{"patch", protocol::channel::base64_encode(bytes)}, {"patchEncoding", "base64"}, {"text", "plain"}};
  CHECK(text_field(j, "patch") == bytes);
  CHECK(text_field(j, "text") == "plain");
  CHECK(text_field(j, "missing").empty());
  CHECK(text_field(protocol::json{{"patch", "%%%"}, {"patchEncoding", "base64"}}, "patch").empty());
}
