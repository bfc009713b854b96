// The protocol client and guest processes against the real lockroom binary: the handshake, a
// sandbox on a git workspace with its progress, processes with pipes and with a pty, errors as
// kinds and fields, cancellation, the server going away.
import assert from "node:assert/strict";
import { test } from "node:test";
import { LockroomError } from "../src/core/errors.js";
import { ProcessHub } from "../src/core/processes.js";
import { clientRequestMethods, type ClientRequests } from "../src/protocol/generated.js";
import { gitWorkspace, startClient } from "./support.js";

test("initialize offers exactly the requests the generated types know", async (t) => {
  const client = await startClient(t);
  assert.equal(client.initializeResult.serverInfo.name, "lockroom");
  // Every request the server offers is in the schema, and every client request in the schema
  // but the lifecycle's is offered.
  const lifecycle = new Set(["initialize", "shutdown"]);
  assert.deepEqual([...client.methods].sort(), clientRequestMethods.filter((m) => !lifecycle.has(m)).sort());
});

test("a sandbox on a git workspace: progress, a command's output and exit, a pty that resizes", async (t) => {
  const ws = gitWorkspace(t, { "README.md": "# demo\n" });
  const client = await startClient(t);
  const progress: string[] = [];
  const created = await client.request("sandbox/create", { workspace: ws, label: "client test" }, {
    onProgress: (p) => progress.push(p.kind),
  });
  assert.match(created.sandboxId, /^sb-/);
  assert.equal(created.state, "ready");
  assert.equal(created.workspace?.host, "git");
  assert.equal(progress[0], "begin");
  assert.equal(progress.at(-1), "end");

  const hub = new ProcessHub(client);
  const cat = await hub.start({ sandboxId: created.sandboxId, argv: ["sh", "-c", "cat README.md; echo oops >&2; exit 3"] });
  const piped = await cat.collect();
  assert.deepEqual(piped, { stdout: "# demo\n", stderr: "oops\n", exit: { exitCode: 3 } });

  const shell = await hub.start({ sandboxId: created.sandboxId, argv: ["sh"], pty: { cols: 80, rows: 24 } });
  let screen = "";
  shell.onOutput((data) => (screen += data.toString("utf8")));
  await shell.resize(132, 40);
  await shell.write("stty size; exit 7\n");
  const exit = await shell.exited();
  assert.equal(exit.exitCode, 7);
  assert.match(screen, /40 132/);

  const list = await client.request("sandbox/list", {});
  assert.ok(list.sandboxes.some((s) => s.sandboxId === created.sandboxId && s.label === "client test" && s.attached === true));
  hub.dispose();
});

test("errors carry their kind or field; a cancelled create says so", async (t) => {
  const client = await startClient(t);
  await assert.rejects(client.request("sandbox/destroy", { sandboxId: "sb-000000000000" }), (e: unknown) => {
    assert.ok(e instanceof LockroomError);
    assert.equal(e.kind, "notFound");
    return true;
  });
  await assert.rejects(
    client.request("sandbox/create", { resources: { memoryMb: 256 } } as unknown as ClientRequests["sandbox/create"]["params"]),
    (e: unknown) => e instanceof LockroomError && e.kind === "invalidParams" && e.field === "resources.memoryMb" && /memoryMiB/.test(e.message),
  );
  const controller = new AbortController();
  const pending = client.request("sandbox/create", {}, { signal: controller.signal });
  setTimeout(() => controller.abort(), 50);
  await assert.rejects(pending, (e: unknown) => e instanceof LockroomError && e.kind === "cancelled");
  // The cancelled create was never handed out.
  const list = await client.request("sandbox/list", {});
  assert.deepEqual(list.sandboxes.filter((s) => s.state === "ready"), []);
});

test("the server going away is an exit with its last words, and requests fail as unavailable", async (t) => {
  const client = await startClient(t);
  process.kill(client.pid!, "SIGKILL");
  const exit = await client.exited();
  assert.equal(exit.signal, "SIGKILL");
  assert.equal(exit.expected, false);
  await assert.rejects(client.request("sandbox/list", {}), (e: unknown) => e instanceof LockroomError && e.kind === "unavailable");
});
