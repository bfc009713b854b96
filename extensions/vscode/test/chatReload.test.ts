// A window reload with a chat, against the real lockroom: the chat's `lockroom acp --shared`
// keeps its sandbox in the same per-user server as the window's own connection. The window
// reviews the chat's changes through its own connection (per hunk, as Source Control does);
// detaching (the reload) ends the agent but leaves the sandbox and its pending change; the
// window's re-attach leaves the chat's sandbox to the chat; the next chat resumes it, its agent
// sees the pending change, and closing the chat ends the sandbox.
import assert from "node:assert/strict";
import { test } from "node:test";
import { sharedAcpOptions } from "../src/core/acp/agents.js";
import { ChatSession } from "../src/core/acp/chatSession.js";
import type { ChatSnapshot } from "../src/core/acp/chatTypes.js";
import { ProcessHub } from "../src/core/processes.js";
import { SandboxReview } from "../src/core/review.js";
import { SandboxesModel } from "../src/core/sandboxes.js";
import { gitWorkspace, lockroomBinary, snapshot, startClient, tempDir, until } from "./support.js";
import { sandboxes, script, scriptedAgent, scriptedKitDir, untilModel } from "./acp/support.js";

const pendingQuestion = (s: ChatSnapshot) => s.pendingQuestions.length > 0;

test("chat reload: the chat's sandbox and its pending change outlive the window; the next chat resumes them", async (t) => {
  const ws = gitWorkspace(t, { "a.txt": "one\ntwo\nthree\n" });
  const serverDir = tempDir(t, "lockroom-vscode-server-");
  const serveArgs = ["--server-dir", serverDir, "--idle-exit", "2", "--detached-grace", "60", "--detached-changes-grace", "120"];
  // The window's own connection starts the shared server (with these short graces).
  const window = await startClient(t, { serveArgs });
  const env = { ...process.env, LOCKROOM_KIT_PATH: await scriptedKitDir() };
  const acpOptions = sharedAcpOptions(serveArgs);
  assert.deepEqual(acpOptions, ["--shared", "--server-dir", serverDir]);
  const log: string[] = [];
  const start = (resume?: { sandboxId: string; sessionId: string }) =>
    ChatSession.start({ lockroom: lockroomBinary(), agent: scriptedAgent, cwd: ws, env, acpOptions, onLog: (l) => log.push(l), ...(resume ? { resume } : {}) });

  const first = await start();
  t.after(() => first.close(10_000));
  const sandbox = first.connection.sandbox;
  assert.ok(sandbox, `the session names its sandbox: ${JSON.stringify(first.connection.session)}`);
  assert.deepEqual([sandbox.resumed, sandbox.shared], [false, true]);
  const before = snapshot(ws);
  const turn = first.prompt(script({ write: "a.txt", text: "ONE\ntwo\nthree\n" }, { write: "b.txt", text: "b from the agent\n" }));
  const asked = await untilModel(first, pendingQuestion, 60_000, "the review's question");
  assert.equal(first.answer(asked.pendingQuestions[0]!.questionId, "keep"), true);
  assert.deepEqual(await turn, { stopReason: "end_turn" });

  // The window reviews the chat's sandbox through its own connection: a hunk of a.txt accepted.
  const review = new SandboxReview(window, sandbox.sandboxId);
  t.after(() => review.dispose());
  const view = await review.refresh();
  assert.deepEqual(view.files.map((f) => [f.path, f.status]), [["a.txt", "modified"], ["b.txt", "added"]]);
  const diff = await review.diff("a.txt");
  assert.equal(diff.hunks.length, 1);
  const outcome = await review.accept([{ path: "a.txt", hunks: [diff.hunks[0]!.id] }]);
  assert.deepEqual(outcome.applied, ["a.txt"]);
  const expected = new Map(before);
  expected.set("a.txt", Buffer.from("ONE\ntwo\nthree\n").toString("base64"));
  assert.deepEqual(snapshot(ws), expected, "the host after the window accepted a.txt's hunk");

  // The reload: the chat's process ends, its sandbox and b.txt's change stay.
  await first.detach(10_000);
  const exit = await first.connection.exited();
  assert.deepEqual([exit.code, exit.signal], [0, null], `lockroom acp --shared exits by itself: ${log.slice(-5).join(" | ")}`);
  assert.ok(sandboxes().some((s) => s.id === sandbox.sandboxId), `sandbox ${sandbox.sandboxId} waits in the shared server`);
  const hub = new ProcessHub(window);
  const model = new SandboxesModel(window, hub);
  t.after(() => {
    model.dispose();
    hub.dispose();
  });
  assert.deepEqual(await model.reattach(ws), [], "the window's re-attach leaves the chat's sandbox to the chat");

  const second = await start({ sandboxId: sandbox.sandboxId, sessionId: first.connection.sessionId });
  t.after(() => second.close(10_000));
  assert.deepEqual(second.connection.sandbox, { sandboxId: sandbox.sandboxId, resumed: true, shared: true });
  const reread = second.prompt(script({ read: "b.txt" }));
  const again = await untilModel(second, pendingQuestion, 60_000, "the next review's question");
  assert.equal(second.answer(again.pendingQuestions[0]!.questionId, "keep"), true);
  assert.deepEqual(await reread, { stopReason: "end_turn" });
  const agentText = second.model.snapshot().entries.filter((e) => e.kind === "tool" && e.toolCallId === "tool-1");
  assert.match(JSON.stringify(agentText), /b from the agent/, "the resumed agent reads the first agent's pending b.txt");
  assert.deepEqual((await review.refresh()).files.map((f) => f.path), ["b.txt"], "what is left to review after the reload");

  await second.close(10_000);
  await until(() => !sandboxes().some((s) => s.id === sandbox.sandboxId), 30_000, "closing the chat to end its sandbox");
  assert.deepEqual(snapshot(ws), expected, "the host: only the accepted hunk, nothing else");
});
