// Stable hunk ids and base + selected hunks, on hand-made hunks (no libgit2 diff involved).
#include <catch2/catch.hpp>

#include "server/workspace/review/hunks.h"

using namespace lockroom::workspace::review;

namespace {

Hunk make_hunk(int old_start, int old_lines, int new_start, int new_lines, std::vector<DiffLine> lines) {
  Hunk h;
  h.old_start = old_start;
  h.old_lines = old_lines;
  h.new_start = new_start;
  h.new_lines = new_lines;
  h.header = "@@ -" + std::to_string(old_start) + "," + std::to_string(old_lines) + " +" + std::to_string(new_start) +
             "," + std::to_string(new_lines) + " @@\n";
  h.lines = std::move(lines);
  h.id = hunk_id("f.txt", "f.txt", h);
  return h;
}

}  // namespace

TEST_CASE("hunk ids depend on path, lines and ordinal, not on position", "[hunks]") {
  Hunk a = make_hunk(1, 1, 1, 1, {{'-', "old\n"}, {'+', "new\n"}});
  Hunk same = make_hunk(1, 1, 1, 1, {{'-', "old\n"}, {'+', "new\n"}});
  CHECK(a.id == same.id);
  CHECK(a.id.size() == 16);
  // Moved (an edit above it): the same id.
  CHECK(a.id == make_hunk(20, 1, 25, 1, {{'-', "old\n"}, {'+', "new\n"}}).id);
  CHECK(a.id != make_hunk(1, 1, 1, 1, {{'-', "old\n"}, {'+', "newer\n"}}).id);
  CHECK(a.id != make_hunk(1, 1, 1, 1, {{' ', "ctx\n"}, {'-', "old\n"}, {'+', "new\n"}}).id);
  CHECK(a.id != hunk_id("f.txt", "f.txt", a, 1));
  CHECK(a.id != hunk_id("g.txt", "g.txt", a));
  CHECK(a.id != hunk_id("f.txt", "renamed.txt", a));
}

TEST_CASE("assign_hunk_ids gives identical hunks of one file distinct ids, by their order", "[hunks]") {
  std::vector<Hunk> hunks = {make_hunk(1, 1, 1, 1, {{'-', "x\n"}, {'+', "y\n"}}), make_hunk(9, 1, 9, 1, {{'-', "z\n"}, {'+', "w\n"}}),
                             make_hunk(20, 1, 20, 1, {{'-', "x\n"}, {'+', "y\n"}})};
  assign_hunk_ids("f.txt", "f.txt", hunks);
  CHECK(hunks[0].id != hunks[2].id);
  CHECK(hunks[0].id == hunk_id("f.txt", "f.txt", hunks[0], 0));
  CHECK(hunks[2].id == hunk_id("f.txt", "f.txt", hunks[2], 1));
  CHECK(hunks[1].id == hunk_id("f.txt", "f.txt", hunks[1], 0));
}

TEST_CASE("apply_selected_hunks applies only the chosen hunks", "[hunks]") {
  std::string base = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
  Hunk first = make_hunk(2, 1, 2, 1, {{' ', "1\n"}, {'-', "2\n"}, {'+', "two\n"}, {' ', "3\n"}});
  first.old_start = 1;  // with one line of context the hunk starts at line 1
  first.old_lines = 3;
  first.id = hunk_id("f.txt", "f.txt", first);
  Hunk second = make_hunk(8, 1, 8, 2, {{' ', "7\n"}, {'-', "8\n"}, {'+', "eight\n"}, {'+', "eight and a half\n"}, {' ', "9\n"}});
  second.old_start = 7;
  second.old_lines = 3;
  second.id = hunk_id("f.txt", "f.txt", second);
  std::vector<Hunk> hunks = {first, second};

  CHECK(*apply_selected_hunks(base, hunks, {first.id}, "f.txt") == "1\ntwo\n3\n4\n5\n6\n7\n8\n9\n");
  CHECK(*apply_selected_hunks(base, hunks, {second.id}, "f.txt") == "1\n2\n3\n4\n5\n6\n7\neight\neight and a half\n9\n");
  CHECK(*apply_selected_hunks(base, hunks, {first.id, second.id}, "f.txt") ==
        "1\ntwo\n3\n4\n5\n6\n7\neight\neight and a half\n9\n");
  CHECK(*apply_selected_hunks(base, hunks, {}, "f.txt") == base);
}

TEST_CASE("apply_selected_hunks handles insertion at the top and a missing final newline", "[hunks]") {
  Hunk top = make_hunk(0, 0, 1, 1, {{'+', "first\n"}});
  CHECK(*apply_selected_hunks("a\nb", {top}, {top.id}, "f") == "first\na\nb");
  Hunk eof = make_hunk(2, 1, 2, 1, {{' ', "a\n"}, {'-', "b"}, {'>', "\n\\ No newline at end of file\n"}, {'+', "b\n"}});
  eof.old_start = 1;
  eof.old_lines = 2;
  eof.new_start = 1;
  eof.new_lines = 2;
  eof.id = hunk_id("f", "f", eof);
  CHECK(*apply_selected_hunks("a\nb", {eof}, {eof.id}, "f") == "a\nb\n");
}

TEST_CASE("apply_selected_hunks refuses hunks that do not fit the base", "[hunks]") {
  Hunk h = make_hunk(1, 1, 1, 1, {{'-', "old\n"}, {'+', "new\n"}});
  auto wrong_line = apply_selected_hunks("other\n", {h}, {h.id}, "f.txt");
  REQUIRE_FALSE(wrong_line.ok());
  CHECK_THAT(wrong_line.error().message, Catch::Contains("does not fit the base of f.txt"));
  Hunk beyond = make_hunk(5, 1, 5, 1, {{'-', "x\n"}, {'+', "y\n"}});
  CHECK_FALSE(apply_selected_hunks("one line\n", {beyond}, {beyond.id}, "f.txt").ok());
}
