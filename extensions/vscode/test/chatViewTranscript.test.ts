// The webview's (and the view's) copy of the transcript (src/webview/chat/transcript.ts), fed a
// real ChatModel's snapshots and patches: each patch gives back the model's own snapshot, says
// which entries changed and which went, and a patch from another version is refused.
import assert from "node:assert/strict";
import { test } from "node:test";
import type * as acp from "@agentclientprotocol/sdk";
import { ChatModel } from "../src/core/acp/chatModel.js";
import { Transcript } from "../src/webview/chat/transcript.js";

const say = (text: string): acp.SessionUpdate => ({ sessionUpdate: "agent_message_chunk", content: { type: "text", text } });
const tool = (toolCallId: string, status: acp.ToolCallStatus): acp.SessionUpdate => ({ sessionUpdate: "tool_call", toolCallId, title: toolCallId, status, kind: "edit" });

test("chatView transcript: patches rebuild the model's snapshot and name what changed", () => {
  const model = new ChatModel({ coalesceMs: 0 });
  const copy = new Transcript();
  assert.equal(copy.version, -1);
  model.userMessage([{ type: "text", text: "hi" }]);
  let change: ReturnType<Transcript["applyPatch"]> = copy.applySnapshot(model.snapshot());
  assert.deepEqual(change, { reset: true, changed: [1], removed: [] });

  model.update(say("Hello, "));
  model.update(say("world"));
  model.update(tool("t1", "pending"));
  change = copy.applyPatch(model.changesSince(copy.version));
  assert.deepEqual(change, { reset: false, changed: [2, 3], removed: [] });
  assert.deepEqual(copy.toSnapshot(), model.snapshot());

  model.update({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "completed" });
  model.turnEnded("end_turn");
  change = copy.applyPatch(model.changesSince(copy.version));
  assert.deepEqual(change, { reset: false, changed: [3, 4], removed: [] });
  assert.deepEqual(copy.toSnapshot(), model.snapshot());
  const t1 = copy.entry(3);
  assert.ok(t1?.kind === "tool" && t1.status === "completed", JSON.stringify(t1));
  assert.equal(copy.session.busy, false);
  model.dispose();
});

test("chatView transcript: the oldest entries dropped by the model go from the copy too", () => {
  const model = new ChatModel({ coalesceMs: 0, limits: { entries: 3 } });
  const copy = new Transcript();
  copy.applySnapshot(model.snapshot());
  model.userMessage([{ type: "text", text: "a" }]);
  model.update(say("b"));
  copy.applyPatch(model.changesSince(copy.version));
  model.update(tool("t1", "completed"));
  model.update(tool("t2", "completed"));
  model.update(tool("t3", "completed"));
  const change = copy.applyPatch(model.changesSince(copy.version));
  assert.deepEqual(change, { reset: false, changed: [3, 4, 5], removed: [1, 2] });
  assert.deepEqual(copy.toSnapshot(), model.snapshot());
  assert.equal(copy.entry(1), undefined);
  model.dispose();
});

test("chatView transcript: a patch from another version is refused and changes nothing", () => {
  const model = new ChatModel({ coalesceMs: 0 });
  const copy = new Transcript();
  model.userMessage([{ type: "text", text: "a" }]);
  const early = model.changesSince(0);
  copy.applySnapshot(model.snapshot());
  model.update(say("b"));
  const late = model.changesSince(copy.version + 1);
  assert.equal(copy.applyPatch(late), null);
  assert.equal(copy.applyPatch({ ...early, since: 99 }), null);
  assert.equal(copy.entries.length, 1);
  assert.ok(copy.applyPatch(model.changesSince(copy.version)));
  assert.deepEqual(copy.toSnapshot(), model.snapshot());
  assert.deepEqual(copy.clear(), { reset: true, changed: [], removed: [1, 2] });
  assert.equal(copy.version, -1);
  model.dispose();
});
