// The ACP face's path mapping between the editor's host folder and the guest's /workspace: what
// is mapped, what is left alone (guest paths outside /workspace stay guest paths, host paths
// outside the project stay host paths), and the message fields it touches.
#include <catch2/catch.hpp>

#include "server/acp/path_map.h"

using lockroom::acp::PathMap;
using nlohmann::json;

TEST_CASE("acp paths: inside the roots are mapped both ways, outside is left alone", "[acp][paths]") {
  PathMap map("/home/ada/proj/");
  CHECK(map.host_root() == "/home/ada/proj");
  CHECK(map.to_host("/workspace") == "/home/ada/proj");
  CHECK(map.to_host("/workspace/src/a.c") == "/home/ada/proj/src/a.c");
  CHECK_FALSE(map.to_host("/workspace2/a.c"));
  CHECK_FALSE(map.to_host("/tmp/build.log"));
  CHECK_FALSE(map.to_host("workspace/a.c"));
  CHECK(map.to_guest("/home/ada/proj/src/a.c") == "/workspace/src/a.c");
  CHECK_FALSE(map.to_guest("/home/ada/project2/a.c"));
  CHECK_FALSE(map.to_guest("/home/ada/.ssh/id_ed25519"));
}

TEST_CASE("acp paths: file URIs, also percent-encoded ones", "[acp][paths]") {
  PathMap map("/home/ada/my proj");
  CHECK(map.uri_to_guest("file:///home/ada/my%20proj/a%20b.txt") == "file:///workspace/a%20b.txt");
  CHECK(map.uri_to_guest("file:///home/ada/my proj/x") == "file:///workspace/x");
  CHECK(map.uri_to_host("file:///workspace/a%20b.txt") == "file:///home/ada/my%20proj/a%20b.txt");
  CHECK(map.uri_to_host("file:///etc/passwd") == "file:///etc/passwd");
  CHECK(map.uri_to_host("https://example.com/workspace/x") == "https://example.com/workspace/x");
}

TEST_CASE("acp paths: a prompt's links, resources and the project path in its text go to the guest", "[acp][paths]") {
  PathMap map("/home/ada/proj");
  json prompt = json::array({
      {{"type", "text"}, {"text", "fix /home/ada/proj/src/a.c and /home/ada/proj, not /home/ada/project2/b.c"}},
      {{"type", "resource_link"}, {"uri", "file:///home/ada/proj/README.md"}, {"name", "README.md"}},
      {{"type", "resource"}, {"resource", {{"uri", "file:///home/ada/proj/x.txt"}, {"text", "see /home/ada/proj/y"}}}},
  });
  map.prompt_to_guest(prompt);
  CHECK(prompt[0]["text"] == "fix /workspace/src/a.c and /workspace, not /home/ada/project2/b.c");
  CHECK(prompt[1]["uri"] == "file:///workspace/README.md");
  CHECK(prompt[1]["name"] == "README.md");
  CHECK(prompt[2]["resource"]["uri"] == "file:///workspace/x.txt");
  CHECK(prompt[2]["resource"]["text"] == "see /workspace/y");
}

TEST_CASE("acp paths: a tool call's locations, diffs, links and raw paths go to the host", "[acp][paths]") {
  PathMap map("/home/ada/proj");
  json update{{"sessionUpdate", "tool_call"},
              {"toolCallId", "t1"},
              {"title", "Edit /workspace/a.c"},
              {"locations", {{{"path", "/workspace/a.c"}, {"line", 3}}, {{"path", "/tmp/scratch"}}}},
              {"content",
               {{{"type", "diff"}, {"path", "/workspace/a.c"}, {"oldText", "x"}, {"newText", "/workspace/keep"}},
                {{"type", "content"}, {"content", {{"type", "resource_link"}, {"uri", "file:///workspace/b.c"}}}},
                {{"type", "diff"}, {"path", "/root/.bashrc"}, {"newText", "y"}}}},
              {"rawInput", {{"file_path", "/workspace/a.c"}, {"command", "cat /workspace/a.c"}, {"paths", {"/workspace", "/opt/x"}}}}};
  map.update_to_host(update);
  CHECK(update["title"] == "Edit /workspace/a.c");  // prose is the agent's own
  CHECK(update["locations"][0]["path"] == "/home/ada/proj/a.c");
  CHECK(update["locations"][0]["line"] == 3);
  CHECK(update["locations"][1]["path"] == "/tmp/scratch");  // a guest path, shown as one
  CHECK(update["content"][0]["path"] == "/home/ada/proj/a.c");
  CHECK(update["content"][0]["newText"] == "/workspace/keep");  // file content is never rewritten
  CHECK(update["content"][1]["content"]["uri"] == "file:///home/ada/proj/b.c");
  CHECK(update["content"][2]["path"] == "/root/.bashrc");
  CHECK(update["rawInput"]["file_path"] == "/home/ada/proj/a.c");
  CHECK(update["rawInput"]["command"] == "cat /workspace/a.c");  // a command line is not a path
  CHECK(update["rawInput"]["paths"][0] == "/home/ada/proj");
  CHECK(update["rawInput"]["paths"][1] == "/opt/x");

  json chunk{{"sessionUpdate", "agent_message_chunk"}, {"content", {{"type", "resource_link"}, {"uri", "file:///workspace/c.c"}}}};
  map.update_to_host(chunk);
  CHECK(chunk["content"]["uri"] == "file:///home/ada/proj/c.c");
}
