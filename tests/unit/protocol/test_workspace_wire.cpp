// Workspace wire types (protocol/workspace.h): sandbox/create's `workspace` and the changes/*
// params read with errors naming the bad field; bytes written as text or base64; modes as octal.
#include <catch2/catch.hpp>

#include "protocol/channel/base64.h"
#include "protocol/workspace.h"

using namespace lockroom::protocol;

namespace {

// The first error a reader reports for `params_text`, read with `read`.
template <typename Read>
std::string error_of(const char* params_text, Read read) {
  json params = json::parse(params_text);
  ParamReader reader(params);
  (void)read(reader);
  INFO(params_text);
  REQUIRE_FALSE(reader.ok());
  CHECK(reader.error().code == rpc_error::kInvalidParams);
  return reader.error().message;
}

std::optional<WorkspaceParams> workspace_of(const json& params) {
  ParamReader reader(params);
  auto w = read_workspace(reader, "workspace");
  INFO(params.dump());
  REQUIRE(reader.ok());
  return w;
}

auto read_ws = [](ParamReader& r) { return read_workspace(r, "workspace"); };

}  // namespace

TEST_CASE("workspace wire: a folder path or an object with secrets options and limits", "[protocol][workspace]") {
  auto plain = workspace_of(json{{"workspace", "/home/me/app"}});
  REQUIRE(plain);
  CHECK(plain->path == "/home/me/app");
  CHECK(plain->withhold.empty());
  CHECK(plain->allow.empty());
  CHECK_FALSE(plain->replace_default_withhold);
  CHECK_FALSE(plain->max_files);
  CHECK_FALSE(plain->max_total_bytes);
  CHECK_FALSE(plain->max_file_bytes);

  auto full = workspace_of(json::parse(R"({"workspace":{"path":"/src","withhold":["*.secret","private/"],
      "allow":[".env.example"],"replaceDefaultWithhold":true,
      "limits":{"maxFiles":10,"maxTotalBytes":4096,"maxFileBytes":1024}}})"));
  REQUIRE(full);
  CHECK(full->path == "/src");
  CHECK(full->withhold == std::vector<std::string>{"*.secret", "private/"});
  CHECK(full->allow == std::vector<std::string>{".env.example"});
  CHECK(full->replace_default_withhold);
  CHECK(full->max_files == 10);
  CHECK(full->max_total_bytes == 4096);
  CHECK(full->max_file_bytes == 1024);

  auto some_limits = workspace_of(json::parse(R"({"workspace":{"path":"/src","limits":{"maxFileBytes":5}}})"));
  REQUIRE(some_limits);
  CHECK_FALSE(some_limits->max_files);
  CHECK(some_limits->max_file_bytes == 5);

  CHECK_FALSE(workspace_of(json::object()));                    // no workspace
  CHECK_FALSE(workspace_of(json{{"workspace", nullptr}}));      // null is no workspace either
}

TEST_CASE("workspace wire: a bad workspace is refused naming the field", "[protocol][workspace]") {
  struct Case {
    const char* params;
    const char* message;
  };
  for (const Case& c : {
           Case{R"({"workspace":"src"})",
                R"(invalid params: "workspace" must be an absolute folder path on the host (or {"path": ...}), got "src")"},
           Case{R"({"workspace":""})",
                R"(invalid params: "workspace" must be an absolute folder path on the host (or {"path": ...}), got "")"},
           Case{R"({"workspace":{"path":"rel/dir"}})",
                R"(invalid params: "workspace" must be an absolute folder path on the host (or {"path": ...}), got "rel/dir")"},
           Case{R"({"workspace":42})", R"(invalid params: "workspace" must be an object, got 42)"},
           Case{R"({"workspace":{}})", R"(invalid params: "workspace.path" is required)"},
           Case{R"({"workspace":{"path":7}})", R"(invalid params: "workspace.path" must be a string, got 7)"},
           Case{R"({"workspace":{"path":"/a","withhold":"*.pem"}})",
                R"(invalid params: "workspace.withhold" must be an array of strings, got "*.pem")"},
           Case{R"({"workspace":{"path":"/a","allow":[".env.example",3]}})",
                R"(invalid params: "workspace.allow" must be an array of strings, but item 1 is 3)"},
           Case{R"({"workspace":{"path":"/a","replaceDefaultWithhold":"yes"}})",
                R"(invalid params: "workspace.replaceDefaultWithhold" must be true or false, got "yes")"},
           Case{R"({"workspace":{"path":"/a","limits":[]}})", R"(invalid params: "workspace.limits" must be an object, got [])"},
           Case{R"({"workspace":{"path":"/a","limits":{"maxFiles":0}}})",
                R"(invalid params: "workspace.limits.maxFiles" must be between 1 and 9223372036854775807, got 0)"},
           Case{R"({"workspace":{"path":"/a","limits":{"maxTotalBytes":-5}}})",
                R"(invalid params: "workspace.limits.maxTotalBytes" must be between 1 and 9223372036854775807, got -5)"},
           Case{R"({"workspace":{"path":"/a","limits":{"maxFileBytes":"1MiB"}}})",
                R"(invalid params: "workspace.limits.maxFileBytes" must be an integer, got "1MiB")"},
           Case{R"({"workspace":{"path":"/a","limits":{"maxFileBytes":1.5}}})",
                R"(invalid params: "workspace.limits.maxFileBytes" must be an integer, got 1.5)"},
       }) {
    CHECK(error_of(c.params, read_ws) == c.message);
  }
}

TEST_CASE("workspace wire: changes/list and changes/diff params", "[protocol][workspace]") {
  {
    json params = json::parse(R"({"sandboxId":"sb-1"})");
    ParamReader reader(params);
    auto p = read_changes_diff(reader);
    REQUIRE(reader.ok());
    CHECK(p.sandbox_id == "sb-1");
    CHECK_FALSE(p.path);
    CHECK(p.refresh);  // a fresh look unless the editor says otherwise
    CHECK_FALSE(p.view_id);
  }
  {
    json params = json::parse(R"({"sandboxId":"sb-1","viewId":"v4-12345678"})");
    ParamReader reader(params);
    auto p = read_changes_diff(reader);
    REQUIRE(reader.ok());
    CHECK(p.view_id == "v4-12345678");
  }
  {
    json params = json::parse(R"({"sandboxId":"sb-1","path":"src/a.c","refresh":false})");
    ParamReader reader(params);
    auto p = read_changes_diff(reader);
    REQUIRE(reader.ok());
    CHECK(p.path == "src/a.c");
    CHECK_FALSE(p.refresh);
  }
  CHECK(error_of(R"({})", read_changes_diff) == R"(invalid params: "sandboxId" is required)");
  CHECK(error_of(R"({"sandboxId":1})", read_changes_diff) == R"(invalid params: "sandboxId" must be a string, got 1)");
  CHECK(error_of(R"({"sandboxId":"sb-1","path":["a"]})", read_changes_diff) == R"(invalid params: "path" must be a string, got ["a"])");
  CHECK(error_of(R"({"sandboxId":"sb-1","refresh":"no"})", read_changes_diff) == R"(invalid params: "refresh" must be true or false, got "no")");
  CHECK(error_of(R"([1])", read_changes_diff) == R"(invalid params: params must be an object, got [1])");
}

TEST_CASE("workspace wire: changes/content params, side defaulting to current", "[protocol][workspace]") {
  {
    json params = json::parse(R"({"sandboxId":"sb-1","path":"a.bin"})");
    ParamReader reader(params);
    auto p = read_changes_content(reader);
    REQUIRE(reader.ok());
    CHECK(p.sandbox_id == "sb-1");
    CHECK(p.path == "a.bin");
    CHECK_FALSE(p.base);
  }
  for (const char* side : {"base", "current"}) {
    json params{{"sandboxId", "sb-1"}, {"path", "a"}, {"side", side}};
    ParamReader reader(params);
    auto p = read_changes_content(reader);
    REQUIRE(reader.ok());
    CHECK(p.base == (std::string(side) == "base"));
  }
  CHECK(error_of(R"({"sandboxId":"sb-1"})", read_changes_content) == R"(invalid params: "path" is required)");
  CHECK(error_of(R"({"sandboxId":"sb-1","path":"a","side":"theirs"})", read_changes_content) ==
        R"(invalid params: "side" must be "base" or "current", got "theirs")");
  CHECK(error_of(R"({"sandboxId":"sb-1","path":"a","side":true})", read_changes_content) ==
        R"(invalid params: "side" must be a string, got true)");
}

TEST_CASE("workspace wire: changes/apply reads the selection, mode, branch and force", "[protocol][workspace]") {
  {
    json params = json::parse(R"({"sandboxId":"sb-7","viewId":"v3-0011aabb"})");
    ParamReader reader(params);
    auto p = read_changes_apply(reader);
    REQUIRE(reader.ok());
    CHECK(p.view_id == "v3-0011aabb");
    CHECK_FALSE(p.select);  // everything
    CHECK_FALSE(p.branch_mode);
    CHECK(p.branch == "sb-7");  // branch mode's default name is the sandbox id
    CHECK_FALSE(p.force);
  }
  {
    json params = json::parse(R"({"sandboxId":"sb-7","viewId":"v3-0011aabb","mode":"branch","branch":"review","force":true,
        "select":[{"path":"a.c"},{"path":"b.c","hunks":["574b76c463fe0940","0011"]},{"path":"c.c","hunks":[]}]})");
    ParamReader reader(params);
    auto p = read_changes_apply(reader);
    REQUIRE(reader.ok());
    CHECK(p.branch_mode);
    CHECK(p.branch == "review");
    CHECK(p.force);
    REQUIRE(p.select);
    REQUIRE(p.select->size() == 3);
    CHECK((*p.select)[0].path == "a.c");
    CHECK_FALSE((*p.select)[0].hunks);  // the whole file
    CHECK((*p.select)[1].hunks == std::vector<std::string>{"574b76c463fe0940", "0011"});
    REQUIRE((*p.select)[2].hunks);
    CHECK((*p.select)[2].hunks->empty());
  }
  {
    json params = json::parse(R"({"sandboxId":"sb-7","viewId":"v3-0011aabb","mode":"worktree","select":[]})");
    ParamReader reader(params);
    auto p = read_changes_apply(reader);
    REQUIRE(reader.ok());
    CHECK_FALSE(p.branch_mode);
    REQUIRE(p.select);  // an empty selection is nothing, not everything
    CHECK(p.select->empty());
  }
  struct Case {
    const char* params;
    const char* message;
  };
  for (const Case& c : {
           Case{R"({"mode":"branch"})", R"(invalid params: "sandboxId" is required)"},
           Case{R"({"sandboxId":"s"})", R"(invalid params: "viewId" is required)"},
           Case{R"({"sandboxId":"s","viewId":7})", R"(invalid params: "viewId" must be a string, got 7)"},
           Case{R"({"sandboxId":"s","viewId":"v1","mode":"copy"})", R"(invalid params: "mode" must be "worktree" or "branch", got "copy")"},
           Case{R"({"sandboxId":"s","viewId":"v1","select":"a.c"})", R"(invalid params: "select" must be a list of {path, hunks?})"},
           Case{R"({"sandboxId":"s","viewId":"v1","select":{"path":"a.c"}})", R"(invalid params: "select" must be a list of {path, hunks?})"},
           Case{R"({"sandboxId":"s","viewId":"v1","select":[{"path":"a"},"b"]})", R"(invalid params: "select[1]" must be an object {path, hunks?})"},
           Case{R"({"sandboxId":"s","viewId":"v1","select":[{"hunks":["x"]}]})", R"(invalid params: "select[0].path" is required)"},
           Case{R"({"sandboxId":"s","viewId":"v1","select":[{"path":"a"},{"path":"b","hunks":"x"}]})",
                R"(invalid params: "select[1].hunks" must be an array of strings, got "x")"},
           Case{R"({"sandboxId":"s","viewId":"v1","select":[{"path":"a","hunks":[1]}]})",
                R"(invalid params: "select[0].hunks" must be an array of strings, but item 0 is 1)"},
           Case{R"({"sandboxId":"s","viewId":"v1","branch":5})", R"(invalid params: "branch" must be a string, got 5)"},
           Case{R"({"sandboxId":"s","viewId":"v1","force":1})", R"(invalid params: "force" must be true or false, got 1)"},
       }) {
    CHECK(error_of(c.params, read_changes_apply) == c.message);
  }
}

TEST_CASE("workspace wire: changes/apply bounds the selection", "[protocol][workspace]") {
  json select = json::array();
  for (int i = 0; i < 100001; ++i) select.push_back({{"path", "f"}});
  json params{{"sandboxId", "s"}, {"viewId", "v1"}, {"select", select}};
  ParamReader reader(params);
  (void)read_changes_apply(reader);
  REQUIRE_FALSE(reader.ok());
  CHECK(reader.error().message == R"(invalid params: "select" has more than 100000 entries)");

  select.erase(select.begin());  // exactly at the bound is fine
  json at_bound{{"sandboxId", "s"}, {"viewId", "v1"}, {"select", select}};
  ParamReader ok_reader(at_bound);
  auto p = read_changes_apply(ok_reader);
  CHECK(ok_reader.ok());
  CHECK(p.select->size() == 100000);
}

TEST_CASE("workspace wire: changes/discard takes some paths or none", "[protocol][workspace]") {
  {
    json params = json::parse(R"({"sandboxId":"sb-1"})");
    ParamReader reader(params);
    auto p = read_changes_discard(reader);
    REQUIRE(reader.ok());
    CHECK_FALSE(p.paths);  // everything
  }
  {
    json params = json::parse(R"({"sandboxId":"sb-1","paths":["a","b/c"]})");
    ParamReader reader(params);
    auto p = read_changes_discard(reader);
    REQUIRE(reader.ok());
    CHECK(p.paths == std::vector<std::string>{"a", "b/c"});
  }
  CHECK(error_of(R"({"sandboxId":"sb-1","paths":"a"})", read_changes_discard) ==
        R"(invalid params: "paths" must be an array of strings, got "a")");
  CHECK(error_of(R"({"paths":[]})", read_changes_discard) == R"(invalid params: "sandboxId" is required)");
  {
    json params = json::parse(R"({"sandboxId":"sb-1","viewId":"v2-ab","select":[{"path":"a","hunks":["h1"]},{"path":"b"}]})");
    ParamReader reader(params);
    auto p = read_changes_discard(reader);
    REQUIRE(reader.ok());
    CHECK(p.view_id == "v2-ab");
    REQUIRE(p.select);
    REQUIRE(p.select->size() == 2);
    CHECK((*p.select)[0].hunks == std::vector<std::string>{"h1"});
    CHECK_FALSE((*p.select)[1].hunks);
  }
  CHECK(error_of(R"({"sandboxId":"sb-1","select":[{"path":"a"}]})", read_changes_discard) ==
        R"(invalid params: "viewId" is required with "select": the view (of changes/list or changes/diff) whose hunks are named)");
  CHECK(error_of(R"({"sandboxId":"sb-1","viewId":"v","paths":["a"],"select":[{"path":"a"}]})", read_changes_discard) ==
        R"(invalid params: "select" cannot be given with "paths": name files and hunks in select only)");
}

TEST_CASE("workspace wire: bytes go out as text when they are UTF-8, else as base64", "[protocol][workspace]") {
  for (std::string text : {std::string(), std::string("plain\n"), std::string("caf\xc3\xa9"),  // 2-byte
                           std::string("\xe2\x82\xac 5"),                                    // 3-byte
                           std::string("\xf0\x9f\x98\x80"),                                  // 4-byte
                           std::string("\xf4\x8f\xbf\xbf"),                                  // U+10FFFF, the last
                           std::string("nul \0 inside", 12)}) {
    json out = json::object();
    put_text_or_base64(out, "text", text);
    INFO(out.dump());
    CHECK(out.at("text") == text);
    CHECK_FALSE(out.contains("textEncoding"));
  }
  for (std::string bytes : {std::string("caf\xe9"),           // Latin-1
                            std::string("\x80"),              // a lone continuation byte
                            std::string("\xc3"),              // cut short at the end
                            std::string("\xe2\x82"),          // cut short at the end
                            std::string("\xc3(x"),            // a lead byte without its continuation
                            std::string("\xc0\xaf"),          // overlong '/'
                            std::string("\xe0\x80\xaf"),      // overlong '/'
                            std::string("\xed\xa0\x80"),      // a surrogate
                            std::string("\xf4\x90\x80\x80"),  // above U+10FFFF
                            std::string("\xf8\x88\x80\x80\x80"),
                            std::string("\xff\xfe"),
                            std::string("\x89PNG\r\n\x1a\n\0\0", 10)}) {
    json out = json::object();
    put_text_or_base64(out, "data", bytes);
    INFO(out.dump());
    CHECK(out.at("dataEncoding") == "base64");
    auto decoded = channel::base64_decode(out.at("data").get<std::string>());
    REQUIRE(decoded);
    CHECK(*decoded == bytes);  // byte for byte
  }
  // Fields beside the one written are left alone; the encoding key follows the field's name.
  json line{{"origin", "+"}};
  put_text_or_base64(line, "patch", std::string("\xff"));
  CHECK(line.at("origin") == "+");
  CHECK(line.at("patchEncoding") == "base64");
  CHECK(line.at("patch") == "/w==");
}

TEST_CASE("workspace wire: modes are six octal digits, no mode is null", "[protocol][workspace]") {
  CHECK(mode_json(0100644) == "100644");
  CHECK(mode_json(0100755) == "100755");
  CHECK(mode_json(0120000) == "120000");
  CHECK(mode_json(040000) == "040000");
  CHECK(mode_json(0160000) == "160000");
  CHECK(mode_json(0).is_null());
}
