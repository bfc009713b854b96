// The core's pure parts, no lockroom needed: framing both ways (split headers, a bare LF, a bad
// length), the selection model's `select`, the sentence an apply turns into, an approval
// question's text and choices, settings turned into sandbox/create params.
package dev.lockroom.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonParser;
import dev.lockroom.core.approvals.ApprovalQuestion;
import dev.lockroom.core.review.ApplyOutcome;
import dev.lockroom.core.review.ReviewSelection;
import dev.lockroom.core.rpc.Framing;
import dev.lockroom.protocol.ChangesApplyResult;
import dev.lockroom.protocol.FileSelection;
import dev.lockroom.protocol.NetworkApproveParams;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

class PureTest {
  @Test
  void framingReadsWhatItWritesAndToleratesABareLf() throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    Framing.write(out, "{\"a\":\"ü\"}");
    Framing.write(out, "{}");
    byte[] bytes = out.toByteArray();
    assertTrue(new String(bytes, StandardCharsets.UTF_8).startsWith("Content-Length: 10\r\n\r\n"));
    ByteArrayInputStream in = new ByteArrayInputStream(bytes);
    assertEquals("{\"a\":\"ü\"}", Framing.read(in, 1 << 20));
    assertEquals("{}", Framing.read(in, 1 << 20));
    assertNull(Framing.read(in, 1 << 20));
    ByteArrayInputStream lf = new ByteArrayInputStream("content-length: 2\nContent-Type: application/vscode-jsonrpc; charset=utf-8\n\n{}".getBytes(StandardCharsets.UTF_8));
    assertEquals("{}", Framing.read(lf, 1 << 20));
    IOException bad = assertThrows(IOException.class, () -> Framing.read(new ByteArrayInputStream("Content-Length: x\r\n\r\n".getBytes(StandardCharsets.UTF_8)), 100));
    assertTrue(bad.getMessage().contains("not a number"), bad.getMessage());
    IOException cut = assertThrows(IOException.class, () -> Framing.read(new ByteArrayInputStream("Content-Length: 9\r\n\r\n{}".getBytes(StandardCharsets.UTF_8)), 100));
    assertTrue(cut.getMessage().contains("ended inside a message"), cut.getMessage());
  }

  @Test
  void aSelectionBecomesTheProtocolsSelect() {
    ReviewSelection s = new ReviewSelection().hunk("a.txt", "0000000000000001", true).hunk("a.txt", "0000000000000002", true)
        .file("b.txt", true).hunk("b.txt", "0000000000000003", true);
    assertEquals(List.of(FileSelection.builder().path("b.txt").build(),
        FileSelection.builder().path("a.txt").hunks(List.of("0000000000000001", "0000000000000002")).build()), s.toSelect());
    assertTrue(s.isSelected("b.txt", "anything"), "a whole file holds all its hunks");
    s.hunk("a.txt", "0000000000000001", false).hunk("a.txt", "0000000000000002", false).file("b.txt", false);
    assertTrue(s.isEmpty());
  }

  @Test
  void anApplyIsOneSentence() {
    ChangesApplyResult r = Json.read(JsonParser.parseString("{\"mode\":\"worktree\",\"files\":["
        + "{\"path\":\"a\",\"status\":\"applied\"},{\"path\":\"b\",\"status\":\"applied\"},{\"path\":\"m\",\"status\":\"merged\"},"
        + "{\"path\":\"c\",\"status\":\"conflict\",\"conflict\":\"PDw8\",\"conflictEncoding\":\"base64\"},"
        + "{\"path\":\"x\",\"status\":\"refused\",\"reason\":\"a symlink\"}],\"counts\":{}}"), ChangesApplyResult.class);
    ApplyOutcome o = ApplyOutcome.of(r);
    assertEquals("<<<", o.conflicts().get(0).text());
    assertEquals("Applied 2 files; merged 1 file with your edits; 1 conflict (c), nothing written to it; 1 file refused (x: a symlink).", o.describe());
    assertEquals(ChangesApplyResult.Mode.WORKTREE, r.mode());
  }

  @Test
  void anApprovalQuestionSaysWhoWantsWhat() {
    NetworkApproveParams p = Json.read(JsonParser.parseString("{\"sandboxId\":\"sb-1\",\"host\":\"example.org\",\"port\":80,"
        + "\"scheme\":\"http\",\"method\":\"GET\",\"path\":\"/x\",\"reason\":\"r\",\"options\":[\"allowOnce\",\"deny\"],"
        + "\"timeoutMs\":60000,\"deadline\":\"2026-11-30T11:10:00.000Z\"}"), NetworkApproveParams.class);
    ApprovalQuestion q = ApprovalQuestion.of(p, Instant.parse("2026-11-30T11:09:45.000Z").toEpochMilli(), null);
    assertEquals("A program in sb-1 wants to reach example.org:80 over http (GET /x).", q.message());
    assertEquals(List.of("Allow once", "Deny"), q.choices().stream().map(ApprovalQuestion.Choice::label).toList());
    assertEquals(15_000, q.remainingMs());
  }

  @Test
  void settingsBecomeCreateParams() {
    SandboxDefaults d = new SandboxDefaults(List.of("node"), 2, 2048, List.of("api.example.com:443", "*.example.org"), true);
    String json = Json.write(d.createParams(Path.of("/home/me/app"), null, null));
    assertEquals("{\"resources\":{\"cpus\":2,\"memoryMiB\":2048},\"kits\":[\"node\"],\"workspace\":\"/home/me/app\","
        + "\"network\":{\"rules\":[{\"action\":\"allow\",\"host\":\"api.example.com\",\"ports\":[443],\"name\":\"settings\"},"
        + "{\"action\":\"allow\",\"host\":\"*.example.org\",\"name\":\"settings\"}],\"unmatched\":\"ask\"},\"label\":\"IntelliJ: app\"}", json);
    LockroomException e = assertThrows(LockroomException.class, () -> SandboxDefaults.allowRule(":443"));
    assertEquals(ErrorKind.INVALID_PARAMS, e.kind());
  }
}
