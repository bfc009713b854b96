// The chat's core against the real `lockroom acp`, the scripted agent in a guest (a session, so
// a sandbox restored from a template, per test): what a turn streams lands in the model as the
// webview will render it; guest paths are shown as host paths; permission questions go through
// the model and their answers reach the agent; the end-of-turn review keeps the host unchanged
// until allowed and then applies exactly the sandbox's files, or keeps them for _lockroom/apply
// later; a connection no rule covers is asked on a fetch tool call; cancel and an agent crash end
// the turn as they should; close leaves no process behind, nor does a start that fails.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as path from "node:path";
import { test } from "node:test";
import { AgentConnection, AgentRequestError } from "../src/core/acp/agentConnection.js";
import type { ChatSnapshot, ToolEntry } from "../src/core/acp/chatTypes.js";
import { gitWorkspace, lockroomBinary, snapshot } from "./support.js";
import { alive, qemuProcesses, sandboxes, script, shown, startChat, untilModel } from "./acp/support.js";

const pendingQuestion = (s: ChatSnapshot) => s.pendingQuestions.length > 0;
const toolEntry = (s: ChatSnapshot, toolCallId: string): ToolEntry => {
  const e = s.entries.find((x): x is ToolEntry => x.kind === "tool" && x.toolCallId === toolCallId);
  assert.ok(e, `a tool entry ${toolCallId} in ${JSON.stringify(s.entries)}`);
  return e;
};
const base64 = (text: string) => Buffer.from(text).toString("base64");

test("acp: a turn's thought, plan and text stream into the model in order; the mode switches", async (t) => {
  const { chat } = await startChat(t, { "README.md": "# demo\n" });
  assert.deepEqual(chat.connection.refusedRequests, []);
  assert.deepEqual(chat.model.snapshot().session.modes, {
    currentModeId: "default",
    availableModes: [
      { id: "default", name: "Default", description: null },
      { id: "plan", name: "Plan", description: null },
    ],
  });
  const prompt = script(
    { think: "pondering" },
    { plan: ["read", "write"] },
    { say: "Hello, " },
    { say: "world" },
    { plan: [{ content: "read", priority: "high", status: "completed" }, { content: "write", priority: "medium", status: "in_progress" }] },
    { stop: "max_tokens" },
  );
  assert.deepEqual(await chat.prompt(prompt), { stopReason: "max_tokens" });
  await chat.setMode("plan");
  await assert.rejects(chat.setMode("nope"), (e: unknown) => e instanceof AgentRequestError && e.code === -32602 && /unknown mode/.test(e.message));
  await assert.rejects(chat.setConfigOption("model", "fast"), /this agent offers no config options/);
  const s = chat.model.snapshot();
  assert.deepEqual(s.entries.map(shown), [
    { kind: "user", content: [{ type: "text", text: prompt }] },
    { kind: "thought", markdown: "pondering" },
    {
      kind: "plan",
      entries: [
        { content: "read", priority: "high", status: "completed" },
        { content: "write", priority: "medium", status: "in_progress" },
      ],
    },
    { kind: "agent", markdown: "Hello, world" },
    { kind: "turnEnd", stopReason: "max_tokens" },
    { kind: "mode", modeId: "plan", name: "Plan" },
  ]);
  assert.equal(s.session.modes?.currentModeId, "plan");
  assert.equal(s.session.busy, false);
  assert.deepEqual(chat.connection.refusedRequests, []);
});

test("acp: a tool call's guest paths are shown as host paths; the agent's own text is not rewritten", async (t) => {
  const { chat, ws } = await startChat(t, { "src/main.txt": "main\n" });
  assert.deepEqual(await chat.prompt(script({ read: "src/main.txt" }, { echo_cwd: true })), { stopReason: "end_turn" });
  const s = chat.model.snapshot();
  assert.deepEqual(s.entries.slice(1).map(shown), [
    {
      kind: "tool",
      toolCallId: "tool-1",
      title: "Read /workspace/src/main.txt",
      toolKind: "read",
      status: "completed",
      locations: [{ path: path.join(ws, "src/main.txt"), line: null }],
      content: [{ type: "text", text: "main\n" }],
    },
    { kind: "agent", markdown: "main\n/workspace" },
    { kind: "turnEnd", stopReason: "end_turn" },
  ]);
  assert.deepEqual(chat.connection.refusedRequests, []);
});

test("acp: permission questions wait in the model; the answers chosen there reach the agent", async (t) => {
  const { chat, ws } = await startChat(t, { "a.txt": "a\n" });
  const turn = chat.prompt(script({ ask: "May I?" }, { ask: "And this?" }));
  let s = await untilModel(chat, pendingQuestion, 30_000, "the first question");
  const [first] = s.pendingQuestions;
  assert.ok(first);
  const asked = s.entries.find((e) => e.id === first.entryId);
  assert.deepEqual(asked && shown(asked), {
    kind: "tool",
    toolCallId: "tool-1",
    title: "May I?",
    toolKind: "other",
    status: "pending",
    locations: [{ path: ws, line: null }],
    content: [],
    question: {
      questionId: first.questionId,
      options: [
        { optionId: "allow", name: "Allow", kind: "allow_once" },
        { optionId: "reject", name: "Reject", kind: "reject_once" },
      ],
      state: "pending",
    },
  });
  assert.equal(chat.answer(first.questionId, "no-such-option"), false, "an option the question does not have");
  assert.equal(chat.answer(first.questionId, "allow"), true);
  assert.equal(chat.answer(first.questionId, "allow"), false, "a question answered already");
  s = await untilModel(chat, (x) => x.pendingQuestions.length > 0 && x.pendingQuestions[0]!.questionId !== first.questionId, 30_000, "the second question");
  assert.equal(chat.answer(s.pendingQuestions[0]!.questionId, "reject"), true);
  assert.deepEqual(await turn, { stopReason: "end_turn" });
  s = chat.model.snapshot();
  const tools = s.entries.filter((e): e is ToolEntry => e.kind === "tool");
  assert.deepEqual(
    tools.map((e) => [e.toolCallId, e.status, e.question?.state, e.question?.optionId]),
    [
      ["tool-1", "completed", "selected", "allow"],
      ["tool-2", "failed", "selected", "reject"],
    ],
  );
  assert.deepEqual(
    s.entries.filter((e) => e.kind === "agent").map((e) => (e.kind === "agent" ? e.markdown : "")),
    ["permission: allow", "permission: reject"],
  );
  assert.deepEqual(s.pendingQuestions, []);
});

test("acp: a connection no rule covers is a question on a fetch tool call; Deny keeps the sandbox out", async (t) => {
  const { chat } = await startChat(t, { "README.md": "# demo\n" });
  const fetch = "import urllib.request\ntry:\n  print(urllib.request.urlopen('http://approval.example.org/', timeout=30).status)\nexcept Exception as e:\n  print('error', e)";
  const turn = chat.prompt(script({ shell: `python3 -c "${fetch}"` }));
  const s = await untilModel(chat, pendingQuestion, 30_000, "the network question");
  const asked = s.entries.find((e) => e.id === s.pendingQuestions[0]!.entryId);
  assert.ok(asked?.kind === "tool", JSON.stringify(asked));
  assert.match(asked.toolCallId, /^lockroom-approve-/);
  assert.deepEqual(shown(asked), {
    kind: "tool",
    toolCallId: asked.toolCallId,
    title: "Let the sandbox connect to http://approval.example.org:80?",
    toolKind: "fetch",
    status: "pending",
    locations: [],
    content: [],
    question: {
      questionId: s.pendingQuestions[0]!.questionId,
      options: [
        { optionId: "allowOnce", name: "Allow once", kind: "allow_once" },
        { optionId: "allowSandbox", name: "Allow for this session", kind: "allow_always" },
        { optionId: "deny", name: "Deny", kind: "reject_once" },
      ],
      state: "pending",
    },
  });
  assert.equal(chat.answer(s.pendingQuestions[0]!.questionId, "deny"), true);
  assert.deepEqual(await turn, { stopReason: "end_turn" });
  const after = chat.model.snapshot();
  assert.equal(toolEntry(after, asked.toolCallId).status, "failed");
  assert.deepEqual(
    after.entries.filter((e) => e.kind === "agent").map((e) => (e.kind === "agent" ? e.markdown : "")),
    ["exit=0 signal=null truncated=false\nerror HTTP Error 403: Forbidden\n"],
    "the guest's request was refused by the proxy",
  );
});

test("acp: a turn that writes two files ends in a review; the host is unchanged until it is allowed, then holds exactly the sandbox's files", async (t) => {
  const { chat, ws } = await startChat(t, { "edit.txt": "old line\n", "keep.txt": "keep\n" });
  const before = snapshot(ws);
  const turn = chat.prompt(script({ write: "edit.txt", text: "new line\n" }, { write: "new.txt", text: "brand new\n" }, { say: "done" }));
  const s = await untilModel(chat, pendingQuestion, 30_000, "the review's question");
  assert.deepEqual(snapshot(ws), before, "the host workspace, byte for byte, while the review is asked");

  assert.deepEqual(
    ["tool-1", "tool-2"].map((id) => toolEntry(s, id).content),
    [
      [{ type: "diff", path: path.join(ws, "edit.txt"), oldText: "old line\n", newText: "new line\n", isNewFile: false }],
      [{ type: "diff", path: path.join(ws, "new.txt"), oldText: null, newText: "brand new\n", isNewFile: true }],
    ],
    "the agent's own edits, with host paths",
  );
  const review = s.entries.at(-1);
  assert.ok(review?.kind === "tool" && review.review, `the last entry is the review: ${JSON.stringify(review)}`);
  assert.match(review.toolCallId, /^lockroom-review-\d+$/);
  assert.equal(s.pendingQuestions[0]!.entryId, review.id);
  assert.ok(review.review.viewId && review.review.sandboxId?.startsWith("sb-"), JSON.stringify(review.review));
  const sorted = (c: ToolEntry["content"]) => [...c].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  assert.deepEqual(
    { ...shown(review), content: sorted(review.content) },
    {
      kind: "tool",
      toolCallId: review.toolCallId,
      title: "Apply 2 changed files from the sandbox",
      toolKind: "edit",
      status: "pending",
      locations: [{ path: path.join(ws, "edit.txt"), line: null }, { path: path.join(ws, "new.txt"), line: null }],
      content: sorted([
        { type: "diff", path: path.join(ws, "edit.txt"), oldText: "old line\n", newText: "new line\n", isNewFile: false },
        { type: "diff", path: path.join(ws, "new.txt"), oldText: null, newText: "brand new\n", isNewFile: true },
      ]),
      review: { sandboxId: review.review.sandboxId, viewId: review.review.viewId, files: ["edit.txt", "new.txt"], outcome: null },
      question: {
        questionId: s.pendingQuestions[0]!.questionId,
        options: [
          { optionId: "apply", name: "Apply to my files", kind: "allow_once" },
          { optionId: "keep", name: "Keep in the sandbox", kind: "reject_once" },
        ],
        state: "pending",
      },
    },
  );

  assert.equal(chat.answer(s.pendingQuestions[0]!.questionId, "apply"), true);
  assert.deepEqual(await turn, { stopReason: "end_turn" });
  const after = chat.model.snapshot();
  const applied = toolEntry(after, review.toolCallId);
  assert.equal(applied.status, "completed");
  assert.equal(applied.review?.outcome, "Applied 2 files to your workspace.");
  assert.deepEqual(after.entries.at(-1) && shown(after.entries.at(-1)!), { kind: "turnEnd", stopReason: "end_turn" });
  const expected = new Map(before);
  expected.set("edit.txt", base64("new line\n"));
  expected.set("new.txt", base64("brand new\n"));
  assert.deepEqual(snapshot(ws), expected, "the host after apply: exactly the sandbox's files, nothing else changed");
});

test("acp: a review kept in the sandbox leaves the host untouched; _lockroom/apply of one path later applies only that file", async (t) => {
  const { chat, ws } = await startChat(t, { "a.txt": "a\n" });
  const before = snapshot(ws);
  const turn = chat.prompt(script({ write: "a.txt", text: "A\n" }, { write: "b.txt", text: "B\n" }));
  const s = await untilModel(chat, pendingQuestion, 30_000, "the review's question");
  assert.equal(chat.answer(s.pendingQuestions[0]!.questionId, "keep"), true);
  assert.deepEqual(await turn, { stopReason: "end_turn" });
  const kept = chat.model.snapshot().entries.find((e): e is ToolEntry => e.kind === "tool" && e.review !== undefined);
  assert.equal(kept?.status, "failed");
  assert.equal(kept?.review?.outcome, "Not applied: your files are unchanged. The changes stay in the sandbox and are offered again after the next turn.");
  assert.deepEqual(snapshot(ws), before, "the host after keep");

  const review = await chat.review();
  assert.deepEqual(
    review.files.map((f) => [f.path, f.status, f.hostPath]),
    [
      ["a.txt", "modified", path.join(ws, "a.txt")],
      ["b.txt", "added", path.join(ws, "b.txt")],
    ],
  );
  const result = await chat.apply([path.join(ws, "a.txt")]);
  assert.equal(result.mode, "worktree");
  assert.deepEqual(result.mode === "worktree" && result.files.map((f) => [f.path, f.status]), [["a.txt", "applied"]]);
  const expected = new Map(before);
  expected.set("a.txt", base64("A\n"));
  assert.deepEqual(snapshot(ws), expected, "the host after applying a.txt alone");

  assert.deepEqual(await chat.discard(["b.txt"]), { discarded: 1 });
  assert.deepEqual((await chat.review()).files, [], "nothing left to review: a.txt applied, b.txt discarded in the guest");
  assert.deepEqual(snapshot(ws), expected, "discard does not touch the host");
});

test("acp: cancel mid-turn ends it cancelled; the session takes the next prompt", async (t) => {
  const { chat } = await startChat(t, { "README.md": "# demo\n" });
  const turn = chat.prompt(script({ say: "working" }, { sleep: 30_000 }, { say: "never" }));
  await untilModel(chat, (s) => s.entries.some((e) => e.kind === "agent" && e.markdown === "working"), 30_000, "the first words");
  const cancelledAt = Date.now();
  await chat.cancel();
  assert.deepEqual(await turn, { stopReason: "cancelled" });
  assert.ok(Date.now() - cancelledAt < 10_000, `the turn ended ${Date.now() - cancelledAt} ms after cancel`);
  assert.deepEqual(await chat.prompt(script({ say: "again" })), { stopReason: "end_turn" });
  const entries = chat.model.snapshot().entries.map(shown);
  assert.deepEqual(entries.slice(1, 3), [{ kind: "agent", markdown: "working" }, { kind: "turnEnd", stopReason: "cancelled" }]);
  assert.deepEqual(entries.slice(4), [{ kind: "agent", markdown: "again" }, { kind: "turnEnd", stopReason: "end_turn" }]);
});

test("acp: the inner agent crashing fails the turn, and the model shows why", async (t) => {
  const { chat } = await startChat(t, { "README.md": "# demo\n" });
  const outcome = await chat.prompt(script({ say: "bye" }, { crash: 3 }));
  assert.ok("error" in outcome, JSON.stringify(outcome));
  assert.match(outcome.error, /the agent exited \(exit code 3/);
  const s = chat.model.snapshot();
  assert.deepEqual(s.entries.slice(1).map(shown), [{ kind: "agent", markdown: "bye" }, { kind: "turnError", message: outcome.error }]);
  assert.equal(s.session.busy, false);
  assert.equal(chat.connection.alive, true, "lockroom itself stays up");
  const again = await chat.prompt(script({ say: "hello?" }));
  assert.ok("error" in again && /the agent exited/.test(again.error), JSON.stringify(again));
});

test("acp: close ends the lockroom acp process and its QEMU", async (t) => {
  const qemuBefore = new Set(qemuProcesses().map((q) => q.pid));
  const { chat } = await startChat(t, { "README.md": "# demo\n" });
  assert.deepEqual(await chat.prompt(script({ say: "up" })), { stopReason: "end_turn" });
  const pid = chat.connection.pid!;
  const mine = sandboxes().filter((s) => s.ownerPid === pid);
  assert.equal(mine.length, 1, `one sandbox owned by lockroom acp (pid ${pid}): ${JSON.stringify(sandboxes())}`);
  const { id, qemuPid } = mine[0]!;
  assert.ok(alive(qemuPid), `its QEMU (pid ${qemuPid}) runs`);

  await chat.close();
  const exit = await chat.connection.exited();
  assert.deepEqual([exit.code, exit.signal, exit.expected], [0, null, true], `lockroom acp exits by itself: ${JSON.stringify(exit)}`);
  assert.deepEqual(chat.model.snapshot().entries.at(-1)?.kind, "exit");
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline && (alive(qemuPid) || sandboxes().some((s) => s.id === id))) await new Promise((r) => setTimeout(r, 200));
  assert.equal(alive(qemuPid), false, `QEMU ${qemuPid} is gone`);
  assert.deepEqual(sandboxes().filter((s) => s.id === id), [], "lockroom ps no longer lists the sandbox");
  const left = qemuProcesses().filter((q) => !qemuBefore.has(q.pid) && (q.ppid === pid || q.args.includes(id) || q.args.includes(`/${pid}-`)));
  assert.deepEqual(left, [], "no qemu-system process of this lockroom acp is left");
});

test("acp: an agent whose kit does not exist fails to start with lockroom's reason and leaves no process", async (t) => {
  const kit = `no-such-kit-${process.pid}`;
  const ws = gitWorkspace(t, { "README.md": "# demo\n" });
  await assert.rejects(
    AgentConnection.start({ lockroom: lockroomBinary(), agent: { name: "missing", kits: [kit], argv: ["agent"] }, cwd: ws }),
    (e: unknown) => e instanceof AgentRequestError && e.method === "initialize" && e.message.includes(`no kit named "${kit}"`),
  );
  assert.deepEqual(processesNaming(kit), [], "no lockroom acp process is left");
  await assert.rejects(
    AgentConnection.start({ lockroom: "/nonexistent/lockroom", agent: { name: "missing", kits: [], argv: ["agent"] }, cwd: ws }),
    /cannot start \/nonexistent\/lockroom: spawn \/nonexistent\/lockroom ENOENT/,
  );
});

/** Processes whose command line holds `word`. */
function processesNaming(word: string): number[] {
  try {
    return execFileSync("pgrep", ["-f", word], { encoding: "utf8" }).trim().split("\n").map(Number);
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

