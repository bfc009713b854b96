// Network approvals against the real lockroom and a real HTTP server on the host's loopback: the
// guest reaches a host nobody allowed, the question reaches the asker with its buttons, "allow in
// sandbox" becomes a rule (network/policyChanged) so the next request is not asked, a deny is a
// denied connection, network/event reports each decision into the sandboxes model, and
// network/policy reads and replaces the running policy.
package dev.lockroom.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonPrimitive;
import com.sun.net.httpserver.HttpServer;
import dev.lockroom.core.approvals.ApprovalQuestion;
import dev.lockroom.core.approvals.Approvals;
import dev.lockroom.protocol.Methods;
import dev.lockroom.protocol.NetworkApproveResult;
import dev.lockroom.protocol.NetworkEventParams;
import dev.lockroom.protocol.NetworkPolicyParams;
import dev.lockroom.protocol.Policy;
import dev.lockroom.protocol.PolicyChangedParams;
import dev.lockroom.protocol.ProcessStartParams;
import dev.lockroom.protocol.Rule;
import dev.lockroom.protocol.SandboxCreateParams;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class NetworkTest {
  private final List<HttpServer> servers = new ArrayList<>();
  private LockroomClient client;
  private ProcessHub hub;
  private SandboxesModel model;

  private int httpServer() throws Exception {
    HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    s.createContext("/", ex -> {
      byte[] body = ("hello " + ex.getRequestURI() + "\n").getBytes(StandardCharsets.UTF_8);
      ex.sendResponseHeaders(200, body.length);
      ex.getResponseBody().write(body);
      ex.close();
    });
    s.start();
    servers.add(s);
    return s.getAddress().getPort();
  }

  @BeforeAll
  void start() {
    client = Support.startClient(true, List.of());
    hub = new ProcessHub(client);
    model = new SandboxesModel(client, hub);
  }

  @AfterAll
  void close() {
    model.close();
    hub.close();
    client.close(15_000);
    for (HttpServer s : servers) s.stop(0);
  }

  private GuestProcess.Collected fetch(String sandboxId, int port, String path) {
    GuestProcess p = Support.await(hub.start(ProcessStartParams.builder().sandboxId(sandboxId).argv(List.of("sh", "-c",
        "export no_proxy= NO_PROXY=; wget -q -O - http://localhost:" + port + path + " 2>&1")).build()), "wget");
    return Support.await(p.collect(), "wget's exit");
  }

  private static Rule exact(int port, String name) {
    return Rule.builder().action(Rule.Action.ALLOW).host("127.0.0.1").ports(List.of(new JsonPrimitive(port))).name(name).build();
  }

  @Test
  void anApprovalRoundTripThenADenyAndThePolicy() throws Exception {
    int allowed = httpServer();
    int other = httpServer();
    List<ApprovalQuestion> questions = Collections.synchronizedList(new ArrayList<>());
    NetworkApproveResult.Decision[] answer = {NetworkApproveResult.Decision.ALLOW_SANDBOX};
    Approvals.serve(client, (q, withdrawn) -> {
      questions.add(q);
      return java.util.concurrent.CompletableFuture.completedFuture(answer[0]);
    }, id -> model.get(id) == null ? null : model.get(id).title());
    List<PolicyChangedParams> policies = Collections.synchronizedList(new ArrayList<>());
    client.on(Methods.NETWORK_POLICY_CHANGED, policies::add);

    // The servers' address is allowed by exact rules (lockroom refuses loopback otherwise), and
    // the guest asks for it as "localhost", which no rule names: so lockroom asks.
    Policy policy = Policy.builder().rules(List.of(exact(allowed, "test-server"), exact(other, "test-server-2")))
        .unmatched(Policy.Unmatched.ASK).build();
    String sandboxId = Support.await(model.create(SandboxCreateParams.builder().network(Json.tree(policy)).label("network test").build(),
        RequestOptions.kNone), "sandbox/create").sandboxId();

    GuestProcess.Collected first = fetch(sandboxId, allowed, "/a");
    assertEquals("hello /a\n", first.stdout());
    assertEquals(1, questions.size());
    ApprovalQuestion q = questions.get(0);
    assertEquals(sandboxId, q.params().sandboxId());
    assertEquals("localhost", q.params().host());
    assertEquals(allowed, q.params().port());
    assertTrue(q.message().contains("in network test wants to reach localhost:" + allowed + " over http"), q.message());
    assertEquals(List.of("Allow once", "Allow in sandbox", "Allow host", "Deny"), q.choices().stream().map(ApprovalQuestion.Choice::label).toList());
    assertTrue(q.remainingMs() > 0 && q.remainingMs() <= q.params().timeoutMs(), "remaining " + q.remainingMs());

    // Allowed for the sandbox: a rule now, so the next request is not asked.
    assertEquals("hello /b\n", fetch(sandboxId, allowed, "/b").stdout());
    assertEquals(1, questions.size());
    PolicyChangedParams granted = policies.stream().filter(p -> p.sandboxId().equals(sandboxId) && p.cause() == PolicyChangedParams.Cause.APPROVAL)
        .findFirst().orElse(null);
    assertNotNull(granted, "network/policyChanged after allowSandbox");
    assertTrue(granted.policy().rules().stream().anyMatch(r -> r.host().equals("localhost") && r.origin() == Rule.Origin.USER));

    // Another port of the same host is asked again; a deny fails the connection.
    answer[0] = NetworkApproveResult.Decision.DENY;
    GuestProcess.Collected denied = fetch(sandboxId, other, "/c");
    assertNotEquals(0L, denied.exit().exitCode());
    assertEquals(2, questions.size());

    // The model holds the decisions (network/event).
    Support.until(() -> model.get(sandboxId).network().stream().anyMatch(e -> e.port() == other && e.decision() == NetworkEventParams.Decision.DENY),
        20_000, "the deny event in the model");
    List<NetworkEventParams> events = model.get(sandboxId).network();
    NetworkEventParams a = events.stream().filter(e -> "/a".equals(e.path()) && e.phase() != NetworkEventParams.Phase.PROGRESS).findFirst().orElseThrow();
    assertEquals(NetworkEventParams.Decision.ALLOW, a.decision());
    assertEquals(NetworkEventParams.Approval.ALLOW_SANDBOX, a.approval());
    NetworkEventParams d = events.stream().filter(e -> e.port() == other && e.decision() == NetworkEventParams.Decision.DENY).findFirst().orElseThrow();
    assertEquals(NetworkEventParams.Approval.DENY, d.approval(), events.stream().map(e -> e.port() + " " + e.decision()).collect(Collectors.joining(", ")));

    // network/policy reads the running policy (the user's grant first) and replaces it.
    var read = client.call(Methods.NETWORK_POLICY, NetworkPolicyParams.builder().sandboxId(sandboxId).build());
    Policy running = Json.read(read.policy(), Policy.class);
    assertEquals(Rule.Origin.USER, running.rules().get(0).origin());
    Policy off = Policy.builder().rules(List.of()).unmatched(Policy.Unmatched.DENY).defaultAllow(false).build();
    client.call(Methods.NETWORK_POLICY, NetworkPolicyParams.builder().sandboxId(sandboxId).policy(Json.tree(off)).build());
    assertTrue(policies.stream().anyMatch(p -> p.sandboxId().equals(sandboxId) && p.cause() == PolicyChangedParams.Cause.REQUEST));
    assertNotEquals(0L, fetch(sandboxId, allowed, "/d").exit().exitCode(), "denied by the new policy");
    assertEquals(2, questions.size(), "unmatched: deny asks nobody");
  }
}
