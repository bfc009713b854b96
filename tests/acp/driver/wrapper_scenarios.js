// @ts-check
// Scenarios of the `lockroom acp` wrapper itself (they need `--lockroom BIN`): the agent's
// /workspace paths reach the editor as host paths, the host workspace stays byte-for-byte
// unchanged until the end-of-turn review is approved, allow applies exactly the sandbox's
// version, reject keeps the host as it was and the review comes back after the next turn, a
// concurrent host edit is a reported conflict and is not overwritten; and, for `lockroom run` as
// well, an editor that goes away leaves no QEMU process behind. The review's shape is documented in README.md.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import { choose } from "./editor.js";
import { eq, eqTree, ok, readOrNull, snapshot } from "./check.js";
import { statuses, toolCalls } from "./scenarios.js";

/** @typedef {import("./main.js").RunContext} RunContext */
/** @typedef {import("./editor.js").Editor} Editor */
/** @typedef {import("@agentclientprotocol/sdk").RequestPermissionRequest} PermissionRequest */
/** @typedef {import("@agentclientprotocol/sdk").SessionUpdate} SessionUpdate */

/** Whether a permission request is the wrapper's review: its tool call has kind "edit". @param {Editor} editor @param {PermissionRequest} req */
export function isReview(editor, req) {
  const call = editor.notifications.find((n) => n.update.sessionUpdate === "tool_call" && n.update.toolCallId === req.toolCall.toolCallId);
  const kind = req.toolCall.kind ?? (call && call.update.sessionUpdate === "tool_call" ? call.update.kind : undefined);
  return kind === "edit";
}

/** The review's diff entries (from its tool_call), sorted by path, oldText null when absent. @param {SessionUpdate[]} updates @param {string} id */
function reviewDiffs(updates, id) {
  const call = toolCalls(updates).find((c) => c.toolCallId === id);
  ok(call, `a tool_call ${id} sent before the review's permission request`);
  eq(call.kind, "edit", "the review tool call's kind");
  return (call.content ?? [])
    .map((c) => (c.type === "diff" ? { type: c.type, path: c.path, oldText: c.oldText ?? null, newText: c.newText } : c))
    .sort((a, b) => ("path" in a && "path" in b ? a.path.localeCompare(b.path) : 0));
}

/** @param {Editor} editor @param {string} id @param {import("@agentclientprotocol/sdk").ToolCallStatus} status @param {string} what */
async function untilStatus(editor, id, status, what) {
  const all = () => editor.notifications.map((n) => n.update);
  await editor.until(() => statuses(all(), id).includes(status), 5000, `${what}: a tool_call_update ${id} with status ${status}`);
  return all().filter((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === id);
}

/** Every path the editor was shown in tool calls (locations and diff paths). @param {SessionUpdate[]} updates */
function shownPaths(updates) {
  const out = [];
  for (const u of updates) {
    if (u.sessionUpdate !== "tool_call" && u.sessionUpdate !== "tool_call_update") continue;
    for (const l of u.locations ?? []) out.push(l.path);
    for (const c of u.content ?? []) if (c.type === "diff") out.push(c.path);
  }
  return out;
}

/** @param {RunContext} t */
async function pathsRewritten(t) {
  const { editor, ws } = await t.start({ "src/main.txt": "main\n" });
  await editor.initialize();
  const { sessionId } = await editor.newSession(ws);
  const turn = await editor.prompt(sessionId, [ // the review at its end is rejected (t.policy)
    { write: "/workspace/src/out.txt", text: "out\n" }, { read: "src/main.txt" }, { shell: "echo hello; sleep 1; echo bye" }, { echo_cwd: true },
  ]);
  eq(turn.stopReason, "end_turn", "stopReason");
  eq(turn.chunks, ["main\n", "exit=0 signal=null truncated=false\nhello\nbye\n", "/workspace"], "texts (the agent's own words are not rewritten)");
  const [write, read, shell] = toolCalls(turn.updates);
  eq(write.locations, [{ path: t.host("src/out.txt") }], "write locations");
  eq(write.content?.map((c) => (c.type === "diff" ? c.path : c.type)), [t.host("src/out.txt")], "write diff path");
  eq(read.locations, [{ path: t.host("src/main.txt") }], "read locations");
  eq(shell.locations, [{ path: ws }], "terminal tool call location (the agent's cwd)");
  // The terminal's output reaches the editor as text, and stays there after the agent released
  // the terminal (the last refresh must not replace it).
  const shellText = () => editor.notifications.filter((n) => n.sessionId === sessionId && n.update.sessionUpdate === "tool_call_update" &&
    n.update.toolCallId === shell.toolCallId).map((n) => JSON.stringify("content" in n.update ? n.update.content : null));
  await editor.until(() => shellText().some((c) => c.includes("[exit code 0]")), 5000, "the shell's final text");
  await new Promise((r) => setTimeout(r, 600)); // past the wrapper's refresh interval
  const last = shellText().at(-1) ?? "";
  ok(last.includes("hello\\nbye\\n") && last.includes("[exit code 0]"), `the shell tool call's last text: ${last}`);
  const shown = shownPaths(turn.updates);
  const outside = shown.filter((p) => p !== ws && !p.startsWith(ws + "/"));
  eq(outside, [], `paths shown to the editor outside the host workspace ${ws}`);
}

/** @param {RunContext} t */
async function reviewAllow(t) {
  const { editor, ws } = await t.start({ "edit.txt": "old line\n", "keep.txt": "keep\n" });
  await editor.initialize();
  const { sessionId } = await editor.newSession(ws);
  const before = snapshot(ws);
  editor.policy = (req) => {
    ok(isReview(editor, req), `only the review asks permission here, got ${JSON.stringify(req.toolCall)}`);
    eqTree(snapshot(ws), before, "host workspace, byte for byte, while the review is asked");
    return choose(req, "allow_once");
  };
  const turn = await editor.prompt(sessionId, [
    { write: "edit.txt", text: "new line\n" }, { write: "new.txt", text: "brand new\n" },
    { shell: "echo made > by-shell.txt" }, { say: "done" },
  ]);
  eq(turn.stopReason, "end_turn", "stopReason");
  eq(turn.permissions.length, 1, "review permission requests in the turn");
  const [review] = turn.permissions;
  eq(review.options.map((o) => o.kind).filter((k) => k === "allow_once" || k === "reject_once"), ["allow_once", "reject_once"], "review option kinds");
  eq(reviewDiffs(turn.updates, review.toolCall.toolCallId), [
    { type: "diff", path: t.host("by-shell.txt"), oldText: null, newText: "made\n" },
    { type: "diff", path: t.host("edit.txt"), oldText: "old line\n", newText: "new line\n" },
    { type: "diff", path: t.host("new.txt"), oldText: null, newText: "brand new\n" },
  ], "the review's diffs: one per changed file, host paths, host text, sandbox text");
  const calls = toolCalls(turn.updates);
  eq(calls[calls.length - 1].toolCallId, review.toolCall.toolCallId, "the review is the turn's last tool call");
  await untilStatus(editor, review.toolCall.toolCallId, "completed", "review applied");
  eqTree(snapshot(ws), {
    ...before,
    "by-shell.txt": Buffer.from("made\n").toString("base64"),
    "edit.txt": Buffer.from("new line\n").toString("base64"),
    "new.txt": Buffer.from("brand new\n").toString("base64"),
  }, "host workspace after allow: exactly the sandbox's versions, nothing else changed");
}

/** @param {RunContext} t */
async function reviewRejectThenOfferedAgain(t) {
  const { editor, ws } = await t.start({ "edit.txt": "old line\n" });
  await editor.initialize();
  const { sessionId } = await editor.newSession(ws);
  const before = snapshot(ws);
  /** @type {import("@agentclientprotocol/sdk").PermissionOptionKind} */
  let answer = "reject_once";
  editor.policy = (req) => {
    ok(isReview(editor, req), `only the review asks permission here, got ${JSON.stringify(req.toolCall)}`);
    return choose(req, answer);
  };
  const first = await editor.prompt(sessionId, [{ write: "edit.txt", text: "new line\n" }]);
  eq(first.permissions.length, 1, "reviews in the first turn");
  eqTree(snapshot(ws), before, "host workspace after reject");

  answer = "allow_once";
  const second = await editor.prompt(sessionId, [{ say: "next" }]);
  eq([second.stopReason, second.chunks], ["end_turn", ["next"]], "the second turn");
  eq(second.permissions.length, 1, "the rejected change is offered again after the next turn");
  eq(reviewDiffs(second.updates, second.permissions[0].toolCall.toolCallId),
    [{ type: "diff", path: t.host("edit.txt"), oldText: "old line\n", newText: "new line\n" }], "the review offered again");
  await untilStatus(editor, second.permissions[0].toolCall.toolCallId, "completed", "review applied");
  eq(readOrNull(t.host("edit.txt")), "new line\n", "host file after allow");
}

/** @param {RunContext} t */
async function reviewConflict(t) {
  const { editor, ws } = await t.start({ "edit.txt": "one\ntwo\nthree\n" });
  await editor.initialize();
  const { sessionId } = await editor.newSession(ws);
  editor.policy = (req) => {
    ok(isReview(editor, req), `only the review asks permission here, got ${JSON.stringify(req.toolCall)}`);
    fs.writeFileSync(t.host("edit.txt"), "one\nTWO-host\nthree\n"); // the user edits the same line meanwhile
    return choose(req, "allow_once");
  };
  const turn = await editor.prompt(sessionId, [{ write: "edit.txt", text: "one\nTWO-agent\nthree\n" }]);
  eq(turn.permissions.length, 1, "reviews in the turn");
  const id = turn.permissions[0].toolCall.toolCallId;
  const updates = await untilStatus(editor, id, "failed", "conflict reported");
  const text = JSON.stringify(updates);
  ok(/conflict/i.test(text) && text.includes(t.host("edit.txt")), `the failed update names the conflict and the host file: ${text}`);
  eq(readOrNull(t.host("edit.txt")), "one\nTWO-host\nthree\n", "the user's concurrent edit is not overwritten");
}

/** The qemu-system processes running now, with their command lines and parents. */
function qemuProcesses() {
  /** @type {number[]} */
  let pids = [];
  try {
    pids = execFileSync("pgrep", ["-f", "qemu-system"], { encoding: "utf8" }).trim().split("\n").map(Number);
  } catch {
    // pgrep exits 1 when nothing matches
  }
  return pids.flatMap((pid) => {
    try {
      const args = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
      const ppid = Number(fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")[1]);
      return args.includes("qemu-system") ? [{ pid, ppid, args }] : [];
    } catch {
      return []; // gone meanwhile
    }
  });
}

/** @param {number} pid */
export function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** @param {string} bin @returns {Array<{ id: string, ownerPid: number, qemuPid: number }>} */
export function sandboxes(bin) {
  return JSON.parse(execFileSync(bin, ["ps", "--json"], { encoding: "utf8" })).sandboxes;
}

/** @param {RunContext} t */
async function editorDisappears(t) {
  const bin = /** @type {string} */ (t.bin);
  const qemuBefore = qemuProcesses();
  const idsBefore = new Set(sandboxes(bin).map((s) => s.id));
  const { editor, ws } = await t.start({ "a.txt": "a\n" });
  await editor.initialize();
  const { sessionId } = await editor.newSession(ws);
  eq((await editor.prompt(sessionId, [{ say: "up" }])).chunks, ["up"], "a turn before the editor goes away");
  // Owned by the process the editor started; else (a lockroom that hands the sandbox to a
  // server of its own) the one new sandbox. Other users may start sandboxes meanwhile.
  const now = sandboxes(bin);
  const owned = now.filter((s) => s.ownerPid === editor.child.pid);
  const mine = owned.length ? owned : now.filter((s) => !idsBefore.has(s.id));
  eq(mine.length, 1, `sandboxes started by this lockroom (lockroom ps: ${JSON.stringify(now)})`);
  const { id, ownerPid, qemuPid } = mine[0];
  ok(alive(qemuPid), `the QEMU of sandbox ${id} (pid ${qemuPid}) runs`);
  ok(qemuProcesses().some((q) => q.pid === qemuPid), `pgrep -f qemu-system finds pid ${qemuPid}`);

  editor.child.stdin.end(); // the editor goes away: lockroom's stdin reaches EOF
  const timer = setTimeout(() => editor.child.kill("SIGKILL"), 30000);
  const status = await editor.exited;
  clearTimeout(timer);
  eq(status.signal, null, "lockroom exits by itself within 30 s of its stdin closing");
  const deadline = Date.now() + 15000;
  while (Date.now() < deadline && (alive(qemuPid) || sandboxes(bin).some((s) => s.id === id))) await new Promise((r) => setTimeout(r, 200));
  ok(!alive(qemuPid), `QEMU of sandbox ${id} (pid ${qemuPid}) is gone`);
  eq(sandboxes(bin).filter((s) => s.id === id), [], "lockroom ps no longer lists the sandbox");
  // Other users' guests may come and go meanwhile: only new QEMUs that are ours count.
  const before = new Set(qemuBefore.map((q) => q.pid));
  const ours = (/** @type {{ pid: number, ppid: number, args: string }} */ q) =>
    q.args.includes(id) || q.args.includes(`/${ownerPid}-`) || q.args.includes(`-${ownerPid}-`) || q.ppid === ownerPid || q.ppid === editor.child.pid;
  const left = qemuProcesses().filter((q) => !before.has(q.pid) && ours(q));
  eq(left.map((q) => q.pid), [], `qemu-system processes left from this run (${qemuBefore.length} ran before)`);
}

/** @type {Array<{ name: string, run: (t: RunContext) => Promise<void> }>} */
export const wrapperScenarios = [
  { name: "paths-rewritten", run: pathsRewritten },
  { name: "review-allow", run: reviewAllow },
  { name: "review-reject-then-offered-again", run: reviewRejectThenOfferedAgain },
  { name: "review-conflict", run: reviewConflict },
];

/** For any lockroom that runs the agent in a guest (`lockroom run` and `lockroom acp`). */
export const lifecycleScenarios = [{ name: "editor-disappears", run: editorDisappears }];
