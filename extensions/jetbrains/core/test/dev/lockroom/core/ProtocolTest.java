// The connection against the real lockroom, without guests: the handshake and the methods it
// offers, errors as kinds and fields, progress, cancellation, window/logMessage, a request from
// lockroom that the client answers and one it is too slow for (lockroom cancels it, the
// question is withdrawn), and the server exiting under pending requests. The test/* methods
// exist only in lockroom's --test-mode (protocol/README.md, "Test mode").
package dev.lockroom.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import dev.lockroom.core.approvals.ApprovalQuestion;
import dev.lockroom.core.approvals.Approvals;
import dev.lockroom.core.rpc.CancelToken;
import dev.lockroom.core.rpc.RequestType;
import dev.lockroom.protocol.Empty;
import dev.lockroom.protocol.KitListParams;
import dev.lockroom.protocol.LogMessageParams;
import dev.lockroom.protocol.Methods;
import dev.lockroom.protocol.NetworkApproveResult;
import dev.lockroom.protocol.ProgressParams;
import dev.lockroom.protocol.SandboxCreateResult;
import dev.lockroom.protocol.SandboxIdParams;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class ProtocolTest {
  private final List<LockroomClient> clients = new ArrayList<>();

  private LockroomClient start(boolean approvals, String... serveArgs) {
    LockroomClient c = Support.startClient(approvals, List.of(serveArgs));
    clients.add(c);
    return c;
  }

  @AfterEach
  void close() {
    for (LockroomClient c : clients) c.close(15_000);
  }

  /** A raw request for methods outside the schema (test/*) or params the schema forbids. */
  private static RequestType<JsonElement, JsonElement> raw(String method) {
    return new RequestType<>(method, JsonElement.class, JsonElement.class);
  }

  @Test
  void initializeOffersExactlyTheRequestsTheGeneratedTypesKnow() {
    LockroomClient client = start(false);
    assertEquals("lockroom", client.initializeResult().serverInfo().name());
    TreeSet<String> expected = new TreeSet<>(Methods.CLIENT_REQUESTS);
    expected.remove("initialize");
    expected.remove("shutdown");
    assertEquals(expected, new TreeSet<>(client.methods()));
    assertTrue(client.initializeResult().capabilities().experimental().lockroom().cancellation());
  }

  @Test
  void errorsCarryTheirKindAndField() {
    LockroomClient client = start(false);
    LockroomException notFound = assertThrows(LockroomException.class,
        () -> client.call(Methods.SANDBOX_DESTROY, SandboxIdParams.builder().sandboxId("sb-000000000000").build()));
    assertEquals(ErrorKind.NOT_FOUND, notFound.kind());
    assertEquals(-32803, notFound.code());
    assertTrue(notFound.getMessage().contains("sb-000000000000"), notFound.getMessage());

    JsonElement misspelt = JsonParser.parseString("{\"resources\":{\"memoryMb\":256}}");
    LockroomException invalid = assertThrows(LockroomException.class, () -> client.call(raw("sandbox/create"), misspelt));
    assertEquals(ErrorKind.INVALID_PARAMS, invalid.kind());
    assertEquals("resources.memoryMb", invalid.field());
    assertTrue(invalid.getMessage().contains("memoryMiB"), invalid.getMessage());

    LockroomException unknown = assertThrows(LockroomException.class, () -> client.call(raw("sandbox/teleport"), new JsonObject()));
    assertEquals(ErrorKind.PROTOCOL, unknown.kind());
    assertEquals(-32601, unknown.code());
  }

  @Test
  void kitsAreListedAndValidated() {
    LockroomClient client = start(false);
    var kits = client.call(Methods.KIT_LIST, KitListParams.builder().build());
    assertTrue(kits.kits().stream().anyMatch(k -> k.name().equals("python")), "the built-in python kit: " + kits.kits());
    List<String> progress = Collections.synchronizedList(new ArrayList<>());
    var plan = Support.await(client.request(Methods.KIT_VALIDATE,
        dev.lockroom.protocol.KitValidateParams.builder().kits(List.of("python")).build(),
        RequestOptions.progress(p -> progress.add(p.kind().wire()))), "kit/validate");
    assertTrue(plan.plan().kits().contains("python"));
    assertEquals("begin", progress.get(0));
    assertEquals("end", progress.get(progress.size() - 1));
    LockroomException missing = assertThrows(LockroomException.class, () -> client.call(Methods.KIT_VALIDATE,
        dev.lockroom.protocol.KitValidateParams.builder().kits(List.of("no-such-kit")).build()));
    assertEquals(ErrorKind.NOT_FOUND, missing.kind());
  }

  @Test
  void progressLogMessagesAndCancellation() {
    LockroomClient client = start(false, "--test-mode");
    List<ProgressParams.Value> progress = Collections.synchronizedList(new ArrayList<>());
    Support.await(client.request(raw("test/progress"), JsonParser.parseString("{\"steps\":3}"), RequestOptions.progress(progress::add)),
        "test/progress");
    assertEquals(ProgressParams.Value.Kind.BEGIN, progress.get(0).kind());
    assertEquals(ProgressParams.Value.Kind.END, progress.get(progress.size() - 1).kind());
    assertTrue(progress.size() >= 3, "begin, reports, end: " + progress);

    List<LogMessageParams> logs = Collections.synchronizedList(new ArrayList<>());
    client.on(Methods.WINDOW_LOG_MESSAGE, logs::add);
    client.call(raw("test/logMessage"), JsonParser.parseString("{\"type\":2,\"message\":\"careful\"}"));
    assertEquals(1, logs.size());
    assertEquals(2, logs.get(0).type());
    assertEquals("careful", logs.get(0).message());

    CancelToken cancel = new CancelToken();
    CompletableFuture<JsonElement> waiting = client.request(raw("test/wait"), JsonParser.parseString("{\"ms\":20000}"), RequestOptions.cancel(cancel));
    cancel.cancel();
    LockroomException cancelled = assertThrows(LockroomException.class, () -> Support.await(waiting, "test/wait"));
    assertEquals(ErrorKind.CANCELLED, cancelled.kind());

    // A token cancelled before the request is sent cancels it right after (never before it exists).
    CancelToken early = new CancelToken();
    early.cancel();
    CompletableFuture<JsonElement> never = client.request(raw("test/wait"), JsonParser.parseString("{\"ms\":20000}"), RequestOptions.cancel(early));
    assertEquals(ErrorKind.CANCELLED, assertThrows(LockroomException.class, () -> Support.await(never, "test/wait")).kind());
  }

  @Test
  void aCancelledCreateIsNeverHandedOut() throws Exception {
    LockroomClient client = start(false);
    CancelToken cancel = new CancelToken();
    List<ProgressParams.Value> progress = Collections.synchronizedList(new ArrayList<>());
    CompletableFuture<SandboxCreateResult> create = client.request(Methods.SANDBOX_CREATE,
        dev.lockroom.protocol.SandboxCreateParams.builder().build(), new RequestOptions(progress::add, cancel));
    Support.until(() -> !progress.isEmpty(), Support.kWaitMs, "the create's first progress");
    assertEquals(Boolean.TRUE, progress.get(0).cancellable());
    cancel.cancel();
    LockroomException e = assertThrows(LockroomException.class, () -> Support.await(create, "sandbox/create"));
    assertEquals(ErrorKind.CANCELLED, e.kind());
    var list = client.call(Methods.SANDBOX_LIST, new Empty());
    assertTrue(list.sandboxes().isEmpty(), "no sandbox handed out: " + list.sandboxes());
  }

  @Test
  void aServerRequestIsAnsweredAndOneAnsweredTooLateIsWithdrawn() throws Exception {
    LockroomClient client = start(true, "--test-mode");
    List<ApprovalQuestion> questions = Collections.synchronizedList(new ArrayList<>());
    List<CancelToken> withdrawn = Collections.synchronizedList(new ArrayList<>());
    NetworkApproveResult.Decision[] answer = {NetworkApproveResult.Decision.ALLOW_ONCE};
    Approvals.serve(client, (q, token) -> {
      questions.add(q);
      withdrawn.add(token);
      if (answer[0] == null) return new CompletableFuture<>(); // never answers
      return CompletableFuture.completedFuture(answer[0]);
    }, id -> "demo sandbox");
    String params = "{\"sandboxId\":\"sb-1a2b3c\",\"host\":\"api.example.org\",\"port\":443,\"scheme\":\"https\","
        + "\"method\":\"CONNECT\",\"reason\":\"no rule covers https api.example.org:443; asking\",\"approvalId\":\"sb-1a2b3c-a1\","
        + "\"key\":\"api.example.org:443\",\"timeoutMs\":%d,\"deadline\":\"2099-01-01T00:00:00.000Z\","
        + "\"process\":{\"pid\":412,\"command\":\"curl https://api.example.org/v1/items\"},"
        + "\"options\":[\"allowOnce\",\"allowSandbox\",\"allowHost\",\"deny\"]}";
    JsonElement call = JsonParser.parseString("{\"method\":\"network/approve\",\"timeoutMs\":10000,\"params\":" + String.format(params, 10000) + "}");
    JsonElement answered = client.call(raw("test/callClient"), call);
    assertEquals("allowOnce", answered.getAsJsonObject().getAsJsonObject("result").get("decision").getAsString(), answered.toString());
    ApprovalQuestion q = questions.get(0);
    assertEquals("curl (pid 412) in demo sandbox wants to reach api.example.org:443 over https.", q.message());
    assertEquals(List.of("Allow once", "Allow in sandbox", "Allow host", "Deny"), q.choices().stream().map(ApprovalQuestion.Choice::label).toList());
    assertTrue(withdrawn.get(0).isCancelled(), "an answered question is withdrawn from the screen");

    // Nobody answers within lockroom's timeout: lockroom sends $/cancelRequest, the question is withdrawn.
    answer[0] = null;
    JsonElement late = JsonParser.parseString("{\"method\":\"network/approve\",\"timeoutMs\":300,\"params\":" + String.format(params, 300) + "}");
    JsonElement timedOut = client.call(raw("test/callClient"), late);
    assertEquals(-32800, timedOut.getAsJsonObject().getAsJsonObject("error").get("code").getAsInt(), timedOut.toString());
    Support.until(() -> withdrawn.size() == 2 && withdrawn.get(1).isCancelled(), 10_000, "the late question withdrawn");
  }

  @Test
  void theServerExitingFailsPendingRequestsWithItsExit() throws Exception {
    LockroomClient client = start(false, "--test-mode");
    CompletableFuture<JsonElement> pending = client.request(raw("test/wait"), JsonParser.parseString("{\"ms\":30000}"), RequestOptions.kNone);
    Thread.sleep(100);
    ProcessHandle.of(client.pid()).ifPresent(ProcessHandle::destroyForcibly);
    ClientExit exit = Support.await(client.exited(), "lockroom's exit");
    assertEquals(9, exit.signal());
    assertFalse(exit.expected());
    LockroomException e = assertThrows(LockroomException.class, () -> Support.await(pending, "test/wait"));
    assertEquals(ErrorKind.UNAVAILABLE, e.kind());
    assertTrue(e.getMessage().matches("lockroom exited \\(killed by signal 9.*\\) before answering test/wait"), e.getMessage());
    LockroomException after = assertThrows(LockroomException.class, () -> client.call(Methods.SANDBOX_LIST, new Empty()));
    assertEquals(ErrorKind.UNAVAILABLE, after.kind());
    assertTrue(after.getMessage().startsWith("lockroom is gone (killed by signal 9"), after.getMessage());
    assertFalse(client.alive());
    assertNotNull(exit.stderrTail());
  }

  @Test
  void aBinaryThatIsNotThereSaysSo() {
    LockroomException e = assertThrows(LockroomException.class,
        () -> LockroomClient.start(ClientOptions.builder("/nonexistent/lockroom").build()));
    assertEquals(ErrorKind.UNAVAILABLE, e.kind());
    assertTrue(e.getMessage().startsWith("cannot start /nonexistent/lockroom"), e.getMessage());
  }
}
