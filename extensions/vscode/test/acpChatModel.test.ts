// ChatModel alone, fed hand-written ACP update sequences: how chunks, tool calls, plans, modes and
// session state reduce; lockroom's review entry; permission questions and every way they end; the
// bounds and what they drop; change events coalesced on a fake clock, versions, and patches that
// rebuild the snapshot the way the webview will apply them.
import assert from "node:assert/strict";
import { test } from "node:test";
import type * as acp from "@agentclientprotocol/sdk";
import { ChatModel, type ChatScheduler } from "../src/core/acp/chatModel.js";
import type { ChatEntry, ChatPatch, ChatSnapshot } from "../src/core/acp/chatTypes.js";

const text = (t: string): acp.ContentBlock => ({ type: "text", text: t });
const say = (t: string, messageId?: string): acp.SessionUpdate => ({ sessionUpdate: "agent_message_chunk", content: text(t), ...(messageId ? { messageId } : {}) });
const think = (t: string): acp.SessionUpdate => ({ sessionUpdate: "agent_thought_chunk", content: text(t) });
const shown = (e: ChatEntry) => {
  const { id: _id, version: _version, ...rest } = e;
  return rest;
};

/** Timers that run only when the test advances the clock. */
class FakeClock implements ChatScheduler {
  time = 0;
  private timers: { at: number; run: () => void; id: number }[] = [];
  private ids = 0;
  now(): number {
    return this.time;
  }
  setTimeout(run: () => void, ms: number): unknown {
    const timer = { at: this.time + ms, run, id: ++this.ids };
    this.timers.push(timer);
    return timer.id;
  }
  clearTimeout(handle: unknown): void {
    this.timers = this.timers.filter((t) => t.id !== handle);
  }
  get pending(): number {
    return this.timers.length;
  }
  advance(ms: number): void {
    this.time += ms;
    for (;;) {
      const due = this.timers.filter((t) => t.at <= this.time).sort((a, b) => a.at - b.at)[0];
      if (!due) return;
      this.timers = this.timers.filter((t) => t !== due);
      due.run();
    }
  }
}

/** What the webview does with a patch (chatTypes.ts, ChatPatch). */
function applyPatch(state: ChatSnapshot, patch: ChatPatch): ChatSnapshot {
  assert.equal(patch.since, state.version, "a patch applies to the version it was made from");
  const byId = new Map(state.entries.filter((e) => e.id >= patch.firstEntryId).map((e) => [e.id, e]));
  for (const e of patch.entries) byId.set(e.id, e);
  const entries = [...byId.values()].sort((a, b) => a.id - b.id);
  return { version: patch.version, entries, session: patch.session, pendingQuestions: patch.pendingQuestions, dropped: patch.dropped };
}

test("acp chat model: chunks concatenate per run, tool calls merge by id, a turn's plan is replaced, session state is the latest", () => {
  const model = new ChatModel({ scheduler: new FakeClock() });
  model.started({
    sessionId: "s1",
    modes: { currentModeId: "default", availableModes: [{ id: "default", name: "Default" }, { id: "plan", name: "Plan", description: "think first" }] },
  });
  model.userMessage([
    text("look at "),
    { type: "resource_link", uri: "file:///w/a.txt", name: "a.txt" },
    { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" },
    { type: "resource", resource: { uri: "file:///w/b.txt", text: "bee\n", mimeType: "text/plain" } },
  ]);
  for (const u of [
    think("let me "),
    think("think"),
    say("Hel"),
    say("lo"),
    {
      sessionUpdate: "tool_call",
      toolCallId: "t1",
      title: "Run ls",
      kind: "execute",
      status: "pending",
      locations: [{ path: "/w" }],
      content: [{ type: "terminal", terminalId: "term-1" }],
      rawInput: { command: "ls" },
    },
    { sessionUpdate: "plan", entries: [{ content: "list", priority: "high", status: "in_progress" }] },
    { sessionUpdate: "tool_call_update", toolCallId: "t1", status: "in_progress", title: null, content: [{ type: "content", content: text("a.txt\n") }] },
    { sessionUpdate: "tool_call_update", toolCallId: "t1", status: "completed", locations: [{ path: "/w/a.txt", line: 3 }] },
    say(" again"),
    { sessionUpdate: "plan", entries: [{ content: "list", priority: "high", status: "completed" }, { content: "read", priority: "low", status: "pending" }] },
    say("one", "m1"),
    say(" more", "m1"),
    say("two", "m2"),
    { sessionUpdate: "current_mode_update", currentModeId: "plan" },
    { sessionUpdate: "current_mode_update", currentModeId: "plan" },
    { sessionUpdate: "available_commands_update", availableCommands: [{ name: "web", description: "search", input: { hint: "query" } }, { name: "init", description: "start" }] },
    { sessionUpdate: "config_option_update", configOptions: [{ id: "model", name: "Model", type: "select", currentValue: "m", options: [{ value: "m", name: "M" }] }] },
    { sessionUpdate: "session_info_update", title: "Listing files" },
    { sessionUpdate: "usage_update", used: 1200, size: 200000 },
    { sessionUpdate: "notice", severity: "warning", title: "Slow network" },
    { sessionUpdate: "compaction_update", compactionId: "c1", status: "in_progress" },
  ] satisfies acp.SessionUpdate[])
    model.update(u);
  model.turnEnded("end_turn");
  model.userMessage([text("next")]);
  model.update({ sessionUpdate: "plan", entries: [{ content: "new", priority: "medium", status: "pending" }] });
  model.turnFailed("the session has ended: the agent exited (exit code 3)");

  const s = model.snapshot();
  assert.deepEqual(s.entries.map(shown), [
    {
      kind: "user",
      content: [
        { type: "text", text: "look at " },
        { type: "link", uri: "file:///w/a.txt", name: "a.txt" },
        { type: "image", mimeType: "image/png", uri: null },
        { type: "resource", uri: "file:///w/b.txt", text: "bee\n", mimeType: "text/plain" },
      ],
    },
    { kind: "thought", markdown: "let me think" },
    { kind: "agent", markdown: "Hello" },
    {
      kind: "tool",
      toolCallId: "t1",
      title: "Run ls",
      toolKind: "execute",
      status: "completed",
      locations: [{ path: "/w/a.txt", line: 3 }],
      content: [{ type: "text", text: "a.txt\n" }],
    },
    {
      kind: "plan",
      entries: [
        { content: "list", priority: "high", status: "completed" },
        { content: "read", priority: "low", status: "pending" },
      ],
    },
    { kind: "agent", markdown: " againone more" },
    { kind: "agent", markdown: "two" },
    { kind: "mode", modeId: "plan", name: "Plan" },
    { kind: "notice", severity: "warning", title: "Slow network", description: null },
    { kind: "turnEnd", stopReason: "end_turn" },
    { kind: "user", content: [{ type: "text", text: "next" }] },
    { kind: "plan", entries: [{ content: "new", priority: "medium", status: "pending" }] },
    { kind: "turnError", message: "the session has ended: the agent exited (exit code 3)" },
  ]);
  assert.deepEqual(s.session, {
    busy: false,
    ended: false,
    modes: {
      currentModeId: "plan",
      availableModes: [
        { id: "default", name: "Default", description: null },
        { id: "plan", name: "Plan", description: "think first" },
      ],
    },
    configOptions: [{ id: "model", name: "Model", type: "select", currentValue: "m", options: [{ value: "m", name: "M" }] }],
    commands: [
      { name: "web", description: "search", hint: "query" },
      { name: "init", description: "start", hint: null },
    ],
    title: "Listing files",
    usage: { used: 1200, size: 200000 },
  });
  assert.deepEqual(s.dropped, { entries: 0, ignoredUpdates: 1 });
  assert.deepEqual(
    s.entries.map((e) => e.id),
    s.entries.map((_, i) => i + 1),
    "ids follow the transcript's order",
  );
});

test("acp chat model: lockroom's review tool call is a review entry; its question and final update give the outcome", async () => {
  const model = new ChatModel({ scheduler: new FakeClock() });
  const diffs: acp.ToolCallContent[] = [
    { type: "diff", path: "/w/a.txt", oldText: "a\n", newText: "A\n" },
    { type: "diff", path: "/w/b.txt", oldText: null, newText: "B\n" },
  ];
  model.update({
    sessionUpdate: "tool_call",
    toolCallId: "lockroom-review-1",
    title: "Apply 2 changed files from the sandbox",
    kind: "edit",
    status: "pending",
    content: diffs,
    locations: [{ path: "/w/a.txt" }, { path: "/w/b.txt" }],
    rawInput: { sandboxId: "sb-1", viewId: "v-7", files: ["a.txt", "b.txt"] },
  });
  const answered = model.ask(
    {
      sessionId: "s1",
      toolCall: { toolCallId: "lockroom-review-1", title: "Apply 2 changed files from the sandbox", kind: "edit", status: "pending" },
      options: [
        { optionId: "apply", name: "Apply to my files", kind: "allow_once" },
        { optionId: "keep", name: "Keep in the sandbox", kind: "reject_once" },
      ],
    },
    new AbortController().signal,
  );
  const asked = model.snapshot();
  assert.equal(asked.entries.length, 1, "the question hangs on the review's entry");
  assert.deepEqual(asked.pendingQuestions, [{ questionId: "q1", entryId: 1 }]);
  assert.equal(model.answer("q1", "apply"), true);
  assert.deepEqual(await answered, { outcome: "selected", optionId: "apply" });
  const outcome = "Applied 1 file; not applied:\n- b.txt: conflicts with your own edit of it; your file was left as it is\nWhat was not applied stays in the sandbox and is offered again after the next turn.";
  model.update({ sessionUpdate: "tool_call_update", toolCallId: "lockroom-review-1", status: "failed", content: [...diffs, { type: "content", content: text(outcome) }] });
  assert.deepEqual(model.snapshot().entries.map(shown), [
    {
      kind: "tool",
      toolCallId: "lockroom-review-1",
      title: "Apply 2 changed files from the sandbox",
      toolKind: "edit",
      status: "failed",
      locations: [{ path: "/w/a.txt", line: null }, { path: "/w/b.txt", line: null }],
      content: [
        { type: "diff", path: "/w/a.txt", oldText: "a\n", newText: "A\n", isNewFile: false },
        { type: "diff", path: "/w/b.txt", oldText: null, newText: "B\n", isNewFile: true },
        { type: "text", text: outcome },
      ],
      review: { sandboxId: "sb-1", viewId: "v-7", files: ["a.txt", "b.txt"], outcome },
      question: {
        questionId: "q1",
        options: [
          { optionId: "apply", name: "Apply to my files", kind: "allow_once" },
          { optionId: "keep", name: "Keep in the sandbox", kind: "reject_once" },
        ],
        state: "selected",
        optionId: "apply",
      },
    },
  ]);
  assert.deepEqual(model.snapshot().pendingQuestions, []);
});

test("acp chat model: a question without a tool call makes its entry; it ends by answer, dismissal, abort, cancel, a newer question or the process's end", async () => {
  const model = new ChatModel({ scheduler: new FakeClock() });
  const options: acp.PermissionOption[] = [
    { optionId: "once", name: "Allow once", kind: "allow_once" },
    { optionId: "deny", name: "Deny", kind: "reject_once" },
  ];
  const ask = (toolCallId: string, signal?: AbortSignal) => model.ask({ sessionId: "s", toolCall: { toolCallId, title: `May ${toolCallId}?`, kind: "fetch" }, options }, signal);

  const dismissed = ask("a");
  assert.deepEqual(shown(model.snapshot().entries[0]!), {
    kind: "tool",
    toolCallId: "a",
    title: "May a?",
    toolKind: "fetch",
    status: "pending",
    locations: [],
    content: [],
    question: { questionId: "q1", options, state: "pending" },
  });
  assert.equal(model.answer("q1", null), true);
  assert.deepEqual(await dismissed, { outcome: "cancelled" });

  const controller = new AbortController();
  const aborted = ask("b", controller.signal);
  controller.abort();
  assert.deepEqual(await aborted, { outcome: "cancelled" });
  assert.deepEqual(await ask("c", AbortSignal.abort()), { outcome: "cancelled" }, "a signal aborted already");

  const replaced = ask("d");
  const newer = ask("d");
  assert.deepEqual(await replaced, { outcome: "cancelled" }, "a newer question on the same tool call replaces a pending one");
  const other = ask("e");
  assert.deepEqual(model.snapshot().pendingQuestions, [{ questionId: "q5", entryId: 4 }, { questionId: "q6", entryId: 5 }]);
  model.cancelQuestions();
  assert.deepEqual(await Promise.all([newer, other]), [{ outcome: "cancelled" }, { outcome: "cancelled" }]);

  const last = ask("f");
  model.exited({ code: 1, signal: null, stderrTail: ["lockroom: QEMU died"], expected: false });
  assert.deepEqual(await last, { outcome: "cancelled" });
  assert.deepEqual(await ask("g"), { outcome: "cancelled" }, "after the end every question is cancelled at once");
  const s = model.snapshot();
  assert.deepEqual(
    s.entries.filter((e) => e.kind === "tool").map((e) => (e.kind === "tool" ? [e.toolCallId, e.question?.state] : [])),
    [["a", "cancelled"], ["b", "cancelled"], ["c", "cancelled"], ["d", "cancelled"], ["e", "cancelled"], ["f", "cancelled"]],
  );
  assert.deepEqual(shown(s.entries.at(-1)!), { kind: "exit", code: 1, signal: null, stderrTail: ["lockroom: QEMU died"], expected: false });
  assert.deepEqual([s.session.ended, s.session.busy, s.pendingQuestions], [true, false, []]);
});

test("acp chat model: bounds cut text, tool content and old entries, and say what they dropped", async () => {
  const model = new ChatModel({
    scheduler: new FakeClock(),
    limits: { entries: 5, textChars: 10, toolTextChars: 4, diffChars: 10, toolEntryChars: 20, toolItems: 3 },
  });
  model.update(say("0123456789abc"));
  model.update(say("de"));
  model.update({
    sessionUpdate: "tool_call",
    toolCallId: "t1",
    title: "Edit",
    content: [
      { type: "content", content: text("abcdefgh") },
      { type: "diff", path: "/w/big", oldText: "12345", newText: "678901" },
      { type: "diff", path: "/w/small", newText: "xyz" },
      { type: "content", content: text("dropped") },
    ],
  });
  let s = model.snapshot();
  assert.deepEqual(s.entries.map(shown), [
    { kind: "agent", markdown: "0123456789", truncatedChars: 5 },
    {
      kind: "tool",
      toolCallId: "t1",
      title: "Edit",
      toolKind: "other",
      status: "pending",
      locations: [],
      content: [
        { type: "text", text: "efgh", truncatedChars: 4 },
        { type: "diff", path: "/w/big", oldText: null, newText: null, isNewFile: false, omittedChars: 11 },
        { type: "diff", path: "/w/small", oldText: null, newText: "xyz", isNewFile: true },
      ],
      droppedContent: 1,
    },
  ]);

  const waiting = model.ask({ sessionId: "s", toolCall: { toolCallId: "t1" }, options: [{ optionId: "ok", name: "OK", kind: "allow_once" }] });
  for (let i = 1; i <= 5; i++) model.turnEnded("end_turn");
  s = model.snapshot();
  assert.deepEqual(s.entries.map((e) => [e.id, e.kind]), [[3, "turnEnd"], [4, "turnEnd"], [5, "turnEnd"], [6, "turnEnd"], [7, "turnEnd"]]);
  assert.deepEqual(s.dropped, { entries: 2, ignoredUpdates: 0 });
  assert.deepEqual(await waiting, { outcome: "cancelled" }, "a question whose entry is dropped is cancelled");
  assert.deepEqual(s.pendingQuestions, []);
  model.update({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "completed" });
  assert.deepEqual(shown(model.snapshot().entries.at(-1)!), { kind: "tool", toolCallId: "t1", title: "t1", toolKind: "other", status: "completed", locations: [], content: [] }, "an update for a dropped call starts a new entry");

  const small = new ChatModel({ scheduler: new FakeClock(), limits: { textChars: 10, totalChars: 25 } });
  for (const word of ["aaaaaaaaaa", "bbbbbbbbbb", "cccccccccc"]) {
    small.update(say(word));
    small.turnEnded("end_turn");
  }
  const t = small.snapshot();
  assert.deepEqual(t.entries.map((e) => (e.kind === "agent" ? e.markdown : e.kind)), ["turnEnd", "bbbbbbbbbb", "turnEnd", "cccccccccc", "turnEnd"]);
  assert.equal(t.dropped.entries, 1, "over 25 characters in all, the oldest entry goes");
});

test("acp chat model: change events are coalesced to one per 50 ms with a growing version; patches rebuild the snapshot", () => {
  const clock = new FakeClock();
  const model = new ChatModel({ scheduler: clock, limits: { entries: 4 } });
  const events: [number, number][] = [];
  model.onChange((version) => events.push([clock.time, version]));

  model.userMessage([text("go")]);
  for (let i = 0; i < 100; i++) model.update(say("x"));
  assert.equal(events.length, 0, "nothing before the timer runs");
  assert.equal(clock.pending, 1, "one timer for all those changes");
  clock.advance(0);
  assert.deepEqual(events, [[0, model.version]]);
  assert.equal(model.version, 101, "a version per change");

  clock.advance(10);
  model.update(say("y"));
  clock.advance(39);
  assert.equal(events.length, 1, "not before 50 ms have passed since the last event");
  clock.advance(1);
  assert.deepEqual(events.at(-1), [50, 102]);

  clock.advance(150);
  model.update(think("hmm"));
  clock.advance(0);
  assert.deepEqual(events.at(-1), [200, 103], "after a quiet spell the event comes at once");
  assert.ok(events.every(([, v], i) => i === 0 || v > events[i - 1]![1]), "versions only grow");

  const before = model.snapshot();
  assert.deepEqual(model.changesSince(before.version).entries, [], "nothing changed since the current version");
  model.update(think(" more")); // changes the last entry
  model.update({ sessionUpdate: "tool_call", toolCallId: "t1", title: "Read", kind: "read" });
  model.update({ sessionUpdate: "plan", entries: [{ content: "p", priority: "low", status: "pending" }] });
  model.update({ sessionUpdate: "usage_update", used: 1, size: 2 });
  const patch = model.changesSince(before.version);
  assert.deepEqual(patch.entries.map((e) => e.kind), ["thought", "tool", "plan"], "only the changed and new entries");
  assert.equal(patch.firstEntryId, 2, "the user entry (1) was dropped: 4 entries at most");
  assert.deepEqual(applyPatch(before, patch), model.snapshot());

  model.dispose();
  model.update(say("after"));
  clock.advance(1000);
  assert.equal(events.length, 3, "no events after dispose");
});
