// @ts-check
// Scenarios of `lockroom acp --shared` (protocol/acp.md, "Resuming"; they need `--lockroom BIN`):
// the sessions' sandboxes live in the per-user shared server, so when the editor goes away the
// sandbox waits, detached, with its pending change, and a second `lockroom acp --shared` resumes
// it by `_meta.lockroom.sandboxId`: the new agent sees the first one's edit, the host is untouched
// throughout, a sandbox that is not there is refused by name, and session/close ends it. Each
// scenario uses a server folder of its own and stops the server it started.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { eq, eqTree, ok, snapshot } from "./check.js";
import { alive, sandboxes } from "./wrapper_scenarios.js";

/** @typedef {import("./main.js").RunContext} RunContext */

/** @param {() => boolean} test @param {number} ms @param {string} what */
async function waitFor(test, ms, what) {
  const deadline = Date.now() + ms;
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** lockroom's part of a session/new answer's _meta. @param {unknown} answer */
function lockroomMeta(answer) {
  const meta = /** @type {{ _meta?: { lockroom?: { sandboxId?: string, resumed?: boolean, shared?: boolean } } }} */ (answer)._meta;
  ok(meta?.lockroom, `session/new's answer carries _meta.lockroom: ${JSON.stringify(answer)}`);
  return meta.lockroom;
}

/** @param {RunContext} t */
async function sharedResume(t) {
  const bin = /** @type {string} */ (t.bin);
  const serverDir = fs.mkdtempSync(path.join(os.tmpdir(), "lockroom-acp-server-"));
  const acpArgs = ["--shared", "--server-dir", serverDir];
  let serverPid = 0;
  try {
    const { editor, ws } = await t.start({ "a.txt": "a\n" }, { acpArgs });
    const before = snapshot(ws);
    await editor.initialize();
    const opened = await editor.newSession(ws);
    const first = lockroomMeta(opened);
    eq([typeof first.sandboxId, first.resumed, first.shared], ["string", false, true], "the first session's sandbox: new, in the shared server");
    const sandboxId = /** @type {string} */ (first.sandboxId);
    // The turn's review is rejected (t.policy): the edit stays pending in the sandbox.
    const turn = await editor.prompt(opened.sessionId, [{ write: "a.txt", text: "from the first window\n" }, { say: "written" }]);
    eq(turn.stopReason, "end_turn", "the first turn's stopReason");
    const entry = sandboxes(bin).find((s) => s.id === sandboxId);
    ok(entry, `lockroom ps lists sandbox ${sandboxId}`);
    serverPid = entry.ownerPid;
    ok(serverPid !== editor.child.pid, `the sandbox is the shared server's (pid ${serverPid}), not lockroom acp's (pid ${editor.child.pid})`);

    editor.child.stdin.end(); // the editor goes away (a window reload)
    const timer = setTimeout(() => editor.child.kill("SIGKILL"), 30000);
    const status = await editor.exited;
    clearTimeout(timer);
    eq([status.code, status.signal], [0, null], "lockroom acp exits by itself when its editor goes");
    ok(sandboxes(bin).some((s) => s.id === sandboxId), `sandbox ${sandboxId} waits in the shared server after the editor went`);
    eqTree(snapshot(ws), before, "the host workspace after the first window (nothing applied)");

    const { editor: second } = await t.start(null, { acpArgs });
    await second.initialize();
    const newSession = acp.methods.agent.session.new;
    const missing = await second.agent.request(newSession, { cwd: ws, mcpServers: [], _meta: { lockroom: { sandboxId: "sb-not-there" } } }).then(
      () => "answered",
      (/** @type {Error} */ e) => e.message,
    );
    ok(/sb-not-there cannot be resumed/.test(missing), `resuming a sandbox that is not there fails naming it: ${missing}`);
    const resumedAnswer = await second.agent.request(newSession, { cwd: ws, mcpServers: [], _meta: { lockroom: { sandboxId } } });
    eq(lockroomMeta(resumedAnswer), { sandboxId, resumed: true, shared: true }, "the second session's sandbox: the first one's, resumed");
    const reread = await second.prompt(resumedAnswer.sessionId, [{ read: "a.txt" }]);
    eq(reread.chunks, ["from the first window\n"], "the new agent reads the first agent's pending edit");
    eqTree(snapshot(ws), before, "the host workspace after the second window's turn (nothing applied)");

    await second.agent.request(acp.methods.agent.session.close, { sessionId: resumedAnswer.sessionId });
    await waitFor(() => !sandboxes(bin).some((s) => s.id === sandboxId), 30000, `session/close to end sandbox ${sandboxId}`);
  } finally {
    if (serverPid && alive(serverPid)) process.kill(serverPid, "SIGTERM");
    fs.rmSync(serverDir, { recursive: true, force: true });
  }
}

/** @type {Array<{ name: string, run: (t: RunContext) => Promise<void> }>} */
export const sharedScenarios = [{ name: "shared-resume", run: sharedResume }];
