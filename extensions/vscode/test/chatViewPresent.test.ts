// What the chat view says and offers, without a DOM: line counts of changes, the review card's
// file rows, when per-file Apply / Discard are offered and what ending the chat would lose, the
// words for stop reasons and exits, start problems told with what to do, and the results of
// "Apply file" / "Discard file".
import assert from "node:assert/strict";
import { test } from "node:test";
import type { ChatEntry, ChatSessionState, ToolEntry } from "../src/core/acp/chatTypes.js";
import { lineCounts, splitLines } from "../src/webview/chat/lineStats.js";
import {
  displayPath,
  exitText,
  fileRows,
  formatTokens,
  latestTurnStart,
  offersFileActions,
  stopReasonText,
  unappliedReviewFiles,
} from "../src/webview/chat/present.js";
import { fileActionKey } from "../src/webview/chat/protocol.js";
import { describeStartError } from "../src/ui/chat/startProblems.js";
import { applyResultState, discardResultState, errorState, isStaleView } from "../src/ui/chat/fileActionText.js";

test("chatView lines: added and removed lines are the shortest edit's", () => {
  assert.deepEqual(splitLines("a\nb\n"), ["a", "b"]);
  assert.deepEqual(splitLines("a\r\nb"), ["a", "b"]);
  assert.deepEqual(splitLines(""), []);
  assert.deepEqual(splitLines(null), []);
  const counts = (a: string | null, b: string | null) => {
    const c = lineCounts(a, b);
    return [c.added, c.removed, c.approximate];
  };
  assert.deepEqual(counts("old line\n", "new line\n"), [1, 1, false]);
  assert.deepEqual(counts(null, "a\nb\nc\n"), [3, 0, false]);
  assert.deepEqual(counts("a\nb\n", ""), [0, 2, false]);
  assert.deepEqual(counts("a\nb\nc\n", "a\nb\nc\n"), [0, 0, false]);
  assert.deepEqual(counts("a\nb\nc\nd\n", "a\nx\nc\nd\ne\n"), [2, 1, false]);
  assert.deepEqual(counts("a\nb\na\nb\n", "b\na\nb\na\n"), [1, 1, false]);
  // Moved blocks: a move is a removal and an addition.
  assert.deepEqual(counts("1\n2\n3\n4\n5\n6\n", "4\n5\n6\n1\n2\n3\n"), [3, 3, false]);
});

test("chatView lines: past the work budget the counts are estimated and say so", () => {
  const a = Array.from({ length: 400 }, (_, i) => `a${i}`).join("\n");
  const b = Array.from({ length: 400 }, (_, i) => (i % 2 ? `a${i}` : `b${i}`)).join("\n");
  const exact = lineCounts(a, b);
  assert.deepEqual(exact, { added: 200, removed: 200, approximate: false });
  const estimated = lineCounts(a, b, 1000);
  assert.deepEqual(estimated, { added: 200, removed: 200, approximate: true });
});

const idle: ChatSessionState = { busy: false, ended: false, modes: null, configOptions: [], commands: [], title: null, usage: null };

function review(over: Partial<ToolEntry> = {}): ToolEntry {
  return {
    id: 5,
    version: 9,
    kind: "tool",
    toolCallId: "lockroom-review-1",
    title: "Apply 3 changed files from the sandbox",
    toolKind: "edit",
    status: "failed",
    locations: [],
    content: [
      { type: "diff", path: "/ws/src/a.ts", oldText: "x\n", newText: "y\nz\n", isNewFile: false },
      { type: "diff", path: "/ws/new.txt", oldText: null, newText: "n\n", isNewFile: true },
      { type: "text", text: "big.bin: binary, not shown" },
      { type: "diff", path: "/ws/gone.txt", oldText: "g\n", newText: "", isNewFile: false },
      { type: "diff", path: "/ws/huge.txt", oldText: null, newText: null, isNewFile: false, omittedChars: 3_000_000 },
    ],
    review: { sandboxId: "sb-1", viewId: "v1", files: ["src/a.ts", "new.txt", "big.bin", "gone.txt", "huge.txt"], outcome: "Not applied: …" },
    question: { questionId: "q1", options: [], state: "selected", optionId: "keep" },
    ...over,
  };
}

test("chatView files: a review's rows follow its files, with counts, kind of change and notes", () => {
  const rows = fileRows(review(), "/ws");
  assert.deepEqual(
    rows.map((r) => [r.path, r.diffIndex, r.added, r.removed, r.change, r.note]),
    [
      ["src/a.ts", 0, 2, 1, "modified", null],
      ["new.txt", 1, 1, 0, "added", null],
      ["big.bin", null, 0, 0, "modified", "no text diff to show"],
      ["gone.txt", 3, 0, 1, "deleted", null],
      ["huge.txt", null, 0, 0, "modified", "too large to show here (3,000,000 characters)"],
    ],
  );
  const edit: ToolEntry = { ...review(), review: undefined, content: [{ type: "diff", path: "/elsewhere/x", oldText: "a", newText: "b", isNewFile: false }] };
  assert.deepEqual(fileRows(edit, "/ws").map((r) => r.path), ["/elsewhere/x"]);
  assert.equal(displayPath("/ws/a", "/ws/"), "a");
  assert.equal(displayPath("/wsx/a", "/ws"), "/wsx/a");
  assert.equal(displayPath("/ws/a", null), "/ws/a");
});

test("chatView files: per-file Apply / Discard only on the latest turn's kept review of an idle chat", () => {
  const kept = review();
  const entries: ChatEntry[] = [{ id: 1, version: 1, kind: "user", content: [] }, kept];
  assert.equal(latestTurnStart(entries), 1);
  assert.equal(offersFileActions(kept, 1, idle), true);
  assert.equal(offersFileActions(kept, 6, idle), false, "a later turn started");
  assert.equal(offersFileActions(kept, 1, { ...idle, busy: true }), false, "a turn runs");
  assert.equal(offersFileActions(kept, 1, { ...idle, ended: true }), false, "the chat ended");
  assert.equal(offersFileActions(review({ status: "completed" }), 1, idle), false, "all applied");
  assert.equal(offersFileActions(review({ question: { questionId: "q", options: [], state: "pending" } }), 1, idle), false, "still asked");
  assert.equal(offersFileActions({ ...kept, review: undefined }, 1, idle), false, "not a review");

  assert.deepEqual(unappliedReviewFiles(entries, idle, {}), ["src/a.ts", "new.txt", "big.bin", "gone.txt", "huge.txt"]);
  const done = {
    [fileActionKey(5, "src/a.ts")]: { state: "applied" as const, message: "" },
    [fileActionKey(5, "new.txt")]: { state: "discarded" as const, message: "" },
    [fileActionKey(5, "big.bin")]: { state: "failed" as const, message: "" },
  };
  assert.deepEqual(unappliedReviewFiles(entries, idle, done), ["big.bin", "gone.txt", "huge.txt"]);
  assert.deepEqual(unappliedReviewFiles(entries, { ...idle, busy: true }, {}).length, 5, "a running turn does not hide them");
  assert.deepEqual(unappliedReviewFiles([...entries, { id: 6, version: 10, kind: "user", content: [] }], idle, {}), []);
});

test("chatView words: stop reasons, exits and token counts", () => {
  assert.equal(stopReasonText("end_turn"), null);
  assert.equal(stopReasonText("cancelled"), "Stopped.");
  assert.match(stopReasonText("max_tokens") ?? "", /output limit/);
  assert.match(stopReasonText("something_new") ?? "", /something_new/);
  assert.deepEqual(exitText({ id: 1, version: 1, kind: "exit", code: 0, signal: null, stderrTail: [], expected: true }), { text: "This chat ended; its sandbox is gone.", error: false });
  assert.deepEqual(exitText({ id: 1, version: 1, kind: "exit", code: null, signal: "SIGKILL", stderrTail: [], expected: false }).error, true);
  assert.deepEqual([formatTokens(999), formatTokens(1234), formatTokens(45_600), formatTokens(2_500_000)], ["999", "1.2k", "46k", "2.5M"]);
});

test("chatView start problems: each says what to do", () => {
  const ctx = { lockroomPath: "/opt/lockroom", agentName: "Claude Code" };
  const notFound = describeStartError("cannot start /opt/lockroom: spawn /opt/lockroom ENOENT", ctx);
  assert.equal(notFound.title, "lockroom was not found");
  assert.match(notFound.hint ?? "", /lockroom\.path/);
  assert.deepEqual(notFound.actions.map((a) => a.command), ["openPathSetting", "retry"]);
  assert.match(describeStartError("cannot start /opt/lockroom: spawn /opt/lockroom EACCES", ctx).detail, /is not executable/);

  const kit = describeStartError('initialize: lockroom exited while starting the agent (exit code 2; it said: no kit named "claude2"; looked in: …)', ctx);
  assert.equal(kit.title, "The kit “claude2” does not exist");
  assert.deepEqual(kit.actions.map((a) => a.command), ["openAgentSettings", "showLog"]);

  const key = describeStartError("session/new: secret anthropic_api_key: environment variable ANTHROPIC_API_KEY is not set", ctx);
  assert.equal(key.title, "ANTHROPIC_API_KEY is not set");
  assert.match(key.hint ?? "", /restart VS Code/);

  assert.deepEqual(describeStartError("lockroom: cannot open /dev/kvm: permission denied", ctx).actions[0]?.command, "doctor");
  const other = describeStartError("something odd\nsecond line", ctx);
  assert.equal(other.title, "Claude Code did not start");
  assert.equal(other.detail, "something odd");
});

test("chatView file actions: results and errors in words", () => {
  const applied = (status: "applied" | "merged" | "conflict" | "refused" | "unchanged", reason?: string) =>
    applyResultState({ mode: "worktree", files: [{ path: "a.txt", status, ...(reason ? { reason } : {}) }], counts: {} }, "a.txt");
  assert.deepEqual(applied("applied"), { state: "applied", message: "Applied to your file" });
  assert.equal(applied("merged").state, "applied");
  assert.equal(applied("unchanged").state, "applied");
  assert.deepEqual(applied("conflict").state, "failed");
  assert.deepEqual(applied("refused", "a.txt changed since you reviewed it; list again"), { state: "failed", message: "Not applied: a.txt changed since you reviewed it; list again" });
  assert.equal(applyResultState({ mode: "worktree", files: [], counts: {} }, "a.txt").state, "failed");
  assert.deepEqual(discardResultState({ discarded: 1 }).state, "discarded");
  assert.deepEqual(discardResultState({ discarded: 0 }).state, "failed");
  assert.deepEqual(errorState("apply", new Error("boom")), { state: "failed", message: "Not applied: boom" });
  assert.equal(isStaleView(new Error("_lockroom/apply: the view v3 of the sandbox's changes is no longer kept (the sandbox's files changed…")), true);
  assert.equal(isStaleView(new Error("other")), false);
});
