// Network approvals against the real lockroom and a real HTTP server on the host's loopback: the
// guest reaches a host nobody allowed, the question reaches the client's asker with its buttons,
// "allow for this sandbox" becomes a rule (network/policyChanged) so the next request is not
// asked, a deny is a denied connection, and network/event reports each decision.
import assert from "node:assert/strict";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { serveApprovals, type ApprovalQuestion, type Decision } from "../src/core/approvals.js";
import { ProcessHub } from "../src/core/processes.js";
import type { NetworkEventParams, PolicyChangedParams } from "../src/protocol/generated.js";
import { startClient } from "./support.js";

async function httpServer(): Promise<{ port: number; close: () => void }> {
  const server = http.createServer((req, res) => res.end(`hello ${req.url}\n`));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as AddressInfo).port, close: () => server.close() };
}

test("an approval round trip: asked once, allowed for the sandbox, then a deny", async (t) => {
  const allowed = await httpServer();
  const other = await httpServer();
  t.after(() => {
    allowed.close();
    other.close();
  });
  const client = await startClient(t, { networkApproval: true });
  const questions: ApprovalQuestion[] = [];
  let answer: Decision = "allowSandbox";
  serveApprovals(client, async (q) => {
    questions.push(q);
    return answer;
  });
  const events: NetworkEventParams[] = [];
  const policies: PolicyChangedParams[] = [];
  client.on("network/event", (e) => events.push(e));
  client.on("network/policyChanged", (p) => policies.push(p));

  // The server's address is allowed by an exact rule (lockroom refuses loopback otherwise), and
  // the guest asks for it as "localhost", which no rule names: so lockroom asks.
  const { sandboxId } = await client.request("sandbox/create", {
    network: {
      rules: [
        { action: "allow", host: "127.0.0.1", ports: [allowed.port], name: "test-server" },
        { action: "allow", host: "127.0.0.1", ports: [other.port], name: "test-server-2" },
      ],
      unmatched: "ask",
    },
  });
  const hub = new ProcessHub(client);
  t.after(() => hub.dispose());
  const fetch = async (port: number, path: string) => {
    const p = await hub.start({ sandboxId, argv: ["sh", "-c", `export no_proxy= NO_PROXY=; wget -q -O - http://localhost:${port}${path} 2>&1`] });
    return p.collect();
  };

  const first = await fetch(allowed.port, "/a");
  assert.equal(first.stdout, "hello /a\n");
  assert.equal(questions.length, 1);
  const q = questions[0]!;
  assert.equal(q.params.sandboxId, sandboxId);
  assert.equal(q.params.host, "localhost");
  assert.equal(q.params.port, allowed.port);
  assert.match(q.message, new RegExp(`wants to reach localhost:${allowed.port} over http`));
  assert.deepEqual(q.choices.map((c) => c.label), ["Allow once", "Allow in sandbox", "Allow host", "Deny"]);
  assert.ok(q.remainingMs > 0 && q.remainingMs <= q.params.timeoutMs, `remaining ${q.remainingMs} of ${q.params.timeoutMs}`);

  // Allowed for the sandbox: a rule now, so the next request is not asked.
  const second = await fetch(allowed.port, "/b");
  assert.equal(second.stdout, "hello /b\n");
  assert.equal(questions.length, 1);
  const granted = policies.find((p) => p.sandboxId === sandboxId && p.cause === "approval");
  assert.ok(granted, "network/policyChanged after allowSandbox");
  assert.ok(granted.policy.rules?.some((r) => r.host === "localhost" && r.action === "allow" && r.origin === "user"));

  // Another port of the same host is asked again; a deny fails the connection.
  answer = "deny";
  const denied = await fetch(other.port, "/c");
  assert.notEqual(denied.exit.exitCode, 0);
  assert.equal(questions.length, 2);
  const decided = (path: string) => events.find((e) => e.sandboxId === sandboxId && e.path === path && e.phase !== "progress");
  assert.equal(decided("/a")?.decision, "allow");
  assert.equal(decided("/a")?.approval, "allowSandbox");
  const deniedEvent = events.find((e) => e.sandboxId === sandboxId && e.port === other.port && e.decision === "deny");
  assert.ok(deniedEvent, `a deny event for port ${other.port}: ${JSON.stringify(events.map((e) => [e.port, e.decision, e.approval]))}`);
  assert.equal(deniedEvent.approval, "deny");
});
