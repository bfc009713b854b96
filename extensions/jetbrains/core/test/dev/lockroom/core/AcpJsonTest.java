// The ACP route's set-up block (extensions/jetbrains/acp.json, AI Assistant's `agent_servers`)
// against the real lockroom: every entry is `lockroom acp --kit KIT -- AGENT...`, and the block's
// command line, with the kit and agent swapped for the scripted ACP agent of tests/acp (in the
// `acp-scripted` kit, made here the way tests/acp/driver/kit.js makes it), answers an editor's
// `initialize` and `session/new` on a git folder as AI Assistant would send them (ndjson).
package dev.lockroom.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class AcpJsonTest {
  static final String kKit = "acp-scripted";
  static final String kGuestScript = "/opt/lockroom-test/scripted_agent.py";

  private static JsonObject agentServers() throws Exception {
    Path file = Path.of(System.getProperty("lockroom.jetbrains", "extensions/jetbrains")).resolve("acp.json");
    return JsonParser.parseString(Files.readString(file)).getAsJsonObject().getAsJsonObject("agent_servers");
  }

  /** The kit.yaml of tests/acp/driver/kit.js: extends python, writes the script into the guest. */
  private static Path kitDir() throws Exception {
    String script = Files.readString(Support.repo().resolve("tests/acp/scripted_agent.py"));
    assertFalse(script.contains("\t"), "the scripted agent must not contain tabs (YAML block scalar)");
    String body = script.replaceAll("\n$", "").lines().map(l -> l.isEmpty() ? "" : "      " + l).collect(Collectors.joining("\n"));
    String yaml = String.join("\n", "name: " + kKit, "description: the scripted ACP agent of lockroom's tests (tests/acp/scripted_agent.py)",
        "extends: [python]", "files:", "  - path: " + kGuestScript, "    mode: \"0755\"", "    content: |", body, "");
    Path dir = Support.tempDir("lockroom-jetbrains-kits-");
    Files.createDirectories(dir.resolve(kKit));
    Files.writeString(dir.resolve(kKit).resolve("kit.yaml"), yaml);
    return dir;
  }

  @Test
  void everyEntryIsLockroomAcpWithAKitAndAnAgent() throws Exception {
    JsonObject servers = agentServers();
    assertTrue(servers.size() >= 2, "entries: " + servers.keySet());
    for (Map.Entry<String, JsonElement> e : servers.entrySet()) {
      JsonObject entry = e.getValue().getAsJsonObject();
      assertEquals("lockroom", entry.get("command").getAsString(), e.getKey());
      List<String> args = new ArrayList<>();
      entry.getAsJsonArray("args").forEach(a -> args.add(a.getAsString()));
      assertEquals("acp", args.get(0), e.getKey() + ": " + args);
      assertEquals("--kit", args.get(1), e.getKey() + ": " + args);
      assertEquals("--", args.get(3), e.getKey() + ": " + args);
      assertTrue(args.size() > 4, e.getKey() + " names an agent: " + args);
      assertTrue(entry.get("env").isJsonObject(), e.getKey() + ": env is an object");
    }
  }

  @Test
  void theBlocksCommandAnswersInitializeAndSessionNew() throws Exception {
    JsonObject entry = agentServers().getAsJsonObject("Claude Code (lockroom)");
    List<String> args = new ArrayList<>();
    entry.getAsJsonArray("args").forEach(a -> args.add(a.getAsString()));
    // The same command line with the scripted agent in place of `--kit claude -- claude-agent-acp`.
    List<String> argv = new ArrayList<>(List.of(Support.lockroom()));
    argv.addAll(args.subList(0, args.indexOf("--kit")));
    argv.addAll(List.of("--kit", kKit, "--", "python3", kGuestScript));
    Path kits = kitDir();
    Path ws = Support.gitWorkspace(Map.of("README.md", "# acp\n"));
    ProcessBuilder pb = new ProcessBuilder(argv).redirectError(ProcessBuilder.Redirect.DISCARD);
    entry.getAsJsonObject("env").entrySet().forEach(e -> pb.environment().put(e.getKey(), e.getValue().getAsString()));
    pb.environment().put("LOCKROOM_KIT_PATH", kits.toString());
    Process p = pb.start();
    try {
      BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
      OutputStream in = p.getOutputStream();
      JsonObject init = call(in, out, 1, "initialize", "{\"protocolVersion\":1,\"clientCapabilities\":{\"fs\":{\"readTextFile\":false,"
          + "\"writeTextFile\":false},\"terminal\":false},\"clientInfo\":{\"name\":\"jetbrains-acp-test\",\"version\":\"1\"}}");
      assertEquals(1, init.getAsJsonObject("result").get("protocolVersion").getAsInt(), init.toString());
      JsonObject session = call(in, out, 2, "session/new", "{\"cwd\":" + Json.write(ws.toString()) + ",\"mcpServers\":[]}");
      assertTrue(session.has("result"), session.toString());
      String id = session.getAsJsonObject("result").get("sessionId").getAsString();
      assertFalse(id.isEmpty());
      assertEquals("default", session.getAsJsonObject("result").getAsJsonObject("modes").get("currentModeId").getAsString(), session.toString());
      in.close(); // the editor goes away: lockroom ends the session's sandbox and exits
      assertTrue(p.waitFor(120, TimeUnit.SECONDS), "lockroom acp exits when its editor goes away");
    } finally {
      p.destroyForcibly();
      Support.deleteTree(kits);
      Support.deleteTree(ws);
    }
  }

  /** Sends one ndjson request and reads lines until its reply (notifications are skipped). */
  private static JsonObject call(OutputStream in, BufferedReader out, int id, String method, String params) throws Exception {
    in.write(("{\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"method\":\"" + method + "\",\"params\":" + params + "}\n").getBytes(StandardCharsets.UTF_8));
    in.flush();
    CompletableFuture<JsonObject> reply = CompletableFuture.supplyAsync(() -> {
      try {
        String line;
        while ((line = out.readLine()) != null) {
          if (line.isBlank()) continue;
          JsonObject msg = JsonParser.parseString(line).getAsJsonObject();
          if (msg.has("id") && !msg.has("method") && msg.get("id").getAsInt() == id) return msg;
        }
        throw new AssertionError("lockroom acp closed its output before answering " + method);
      } catch (java.io.IOException e) {
        throw new AssertionError(e);
      }
    });
    return reply.get(Support.kWaitMs * 2, TimeUnit.MILLISECONDS);
  }
}
