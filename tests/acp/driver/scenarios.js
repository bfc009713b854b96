// @ts-check
// Scenarios that hold for any ACP agent running the scripted agent: unwrapped, where the driver
// serves fs/terminal on a temp workspace (the agent directly on the host: the self-test; or in a
// guest through `lockroom run`, stdio piped), and through `lockroom acp` (where the wrapper
// serves them in the guest, the agent sees /workspace, and the editor must see host paths). Each is a function of the run context (see main.js):
// `t.start(files)` gives a connected editor on a fresh workspace, `t.host(rel)` the absolute
// host path the editor must see, `t.agentCwd` the cwd the agent itself sees.
import { choose, textChunks } from "./editor.js";
import { eq, eqTree, ok, readOrNull, snapshot } from "./check.js";

/** @typedef {import("./main.js").RunContext} RunContext */
/** @typedef {import("@agentclientprotocol/sdk").SessionUpdate} SessionUpdate */

/** The tool_call updates of a turn (not their tool_call_update follow-ups). @param {SessionUpdate[]} updates */
export function toolCalls(updates) {
  return /** @type {Array<Extract<SessionUpdate, { sessionUpdate: "tool_call" }>>} */ (
    updates.filter((u) => u.sessionUpdate === "tool_call")
  );
}

/** The statuses reported for one tool call by its tool_call_updates. @param {SessionUpdate[]} updates @param {string} id */
export function statuses(updates, id) {
  return updates.flatMap((u) => (u.sessionUpdate === "tool_call_update" && u.toolCallId === id && u.status ? [u.status] : []));
}

/** @param {RunContext} t */
async function turnStreamsText(t) {
  const { editor, ws } = await t.start({});
  const init = await editor.initialize();
  eq(init.protocolVersion, 1, "initialize protocolVersion");
  if (t.unwrapped) {
    eq(init.agentInfo?.name, "scripted-agent", "agentInfo.name");
    eq(init.agentCapabilities, { loadSession: false, promptCapabilities: { embeddedContext: true } }, "agentCapabilities");
    eq(init.authMethods, [], "authMethods");
  }
  const session = await editor.newSession(ws);
  ok(typeof session.sessionId === "string" && session.sessionId.length > 0, "session/new gives a sessionId");
  eq(session.modes?.currentModeId, "default", "current mode");
  eq(session.modes?.availableModes.map((m) => m.id), ["default", "plan"], "available modes");

  const turn = await editor.prompt(session.sessionId, [
    { say: "hello" }, { think: "pondering" }, { plan: ["one", "two"] }, { say: " world" }, { echo_cwd: true },
  ]);
  eq(turn.stopReason, "end_turn", "stopReason");
  eq(turn.chunks, ["hello", " world", t.agentCwd], "agent_message_chunk texts");
  eq(textChunks(turn.updates, "agent_thought_chunk"), ["pondering"], "agent_thought_chunk texts");
  const plans = turn.updates.filter((u) => u.sessionUpdate === "plan");
  eq(plans.map((p) => ("entries" in p ? p.entries : null)), [[
    { content: "one", priority: "medium", status: "pending" },
    { content: "two", priority: "medium", status: "pending" },
  ]], "plan update");

  const cut = await editor.prompt(session.sessionId, [{ say: "cut" }, { stop: "max_tokens" }, { say: "never" }]);
  eq(cut.stopReason, "max_tokens", "stopReason of a turn stopped with max_tokens");
  eq(cut.chunks, ["cut"], "texts before the stop");

  const refused = await editor.prompt(session.sessionId, [{ say: "first" }, { fly: true }, { say: "never" }]);
  eq(refused.stopReason, "end_turn", "stopReason after an unknown step");
  eq(refused.chunks.length, 2, "chunks after an unknown step");
  ok(refused.chunks[1].startsWith('scripted-agent: unknown step {"fly": true}; known steps: say,'), `refusal text: ${refused.chunks[1]}`);

  await editor.agent.request("session/set_mode", { sessionId: session.sessionId, modeId: "plan" });
  await editor.until(() => editor.notifications.some((n) => n.update.sessionUpdate === "current_mode_update"), 10000, "current_mode_update");
  const modeUpdate = editor.notifications.find((n) => n.update.sessionUpdate === "current_mode_update");
  eq(modeUpdate?.update, { sessionUpdate: "current_mode_update", currentModeId: "plan" }, "current_mode_update");
  /** @type {any} */
  let badMode = null;
  await editor.agent.request("session/set_mode", { sessionId: session.sessionId, modeId: "yolo" }).catch((e) => (badMode = e));
  eq(badMode?.code, -32602, "set_mode to an unknown mode: invalid params");

  if (t.unwrapped) { // the agent's own record, through its extension method
    const state = await editor.agent.request("_scripted/state", {});
    eq(state, {
      sessions: [{ sessionId: session.sessionId, cwd: ws, mode: "plan" }],
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
    }, "_scripted/state");
  }
}

/** @param {RunContext} t */
async function writeThenRead(t) {
  const { editor, ws } = await t.start({ "existing.txt": "line one\nline two\n" });
  await editor.initialize();
  const { sessionId } = await editor.newSession(ws);
  const before = snapshot(ws);
  const text = "héllo ✓\nsecond line\n";
  const turn = await editor.prompt(sessionId, [
    { write: "notes/hello.txt", text }, { read: "notes/hello.txt" }, { read: "existing.txt" },
  ]);
  eq(turn.stopReason, "end_turn", "stopReason");
  eq(turn.chunks, [text, "line one\nline two\n"], "texts read back");

  const calls = toolCalls(turn.updates).slice(0, 3); // through lockroom, the end-of-turn review follows
  eq(calls.map((c) => c.kind), ["edit", "read", "read"], "tool call kinds");
  const [write, read] = calls;
  eq(write.locations, [{ path: t.host("notes/hello.txt") }], "write locations");
  eq(write.content?.map((c) => (c.type === "diff" ? { ...c, oldText: c.oldText ?? null } : c)),
    [{ type: "diff", path: t.host("notes/hello.txt"), oldText: null, newText: text }], "write diff");
  eq(statuses(turn.updates, write.toolCallId), ["completed"], "write status");
  eq(read.locations, [{ path: t.host("notes/hello.txt") }], "read locations");
  eq(statuses(turn.updates, read.toolCallId), ["completed"], "read status");

  if (t.unwrapped) {
    eq(readOrNull(t.host("notes/hello.txt")), text, "host file written by the editor's fs/write_text_file");
  } else {
    eqTree(snapshot(ws), before, "host workspace after a turn whose review was rejected");
  }
}

/** @param {RunContext} t */
async function terminalOutputLimit(t) {
  const { editor, ws } = await t.start({});
  await editor.initialize();
  const { sessionId } = await editor.newSession(ws);
  const turn = await editor.prompt(sessionId, [
    { run: "sh", args: ["-c", "printf 0123456789abcdef; exit 3"], outputByteLimit: 6 },
    { run: "sh", args: ["-c", "printf 'aa\\303\\251\\342\\202\\254'"], outputByteLimit: 4 },
    { shell: "echo to-stderr >&2" },
    { run: "printf", args: ["no limit"] },
  ]);
  eq(turn.stopReason, "end_turn", "stopReason");
  eq(turn.chunks, [
    "exit=3 signal=null truncated=true\nabcdef",
    // the last 4 bytes are a9 e2 82 ac: the cut lands inside "é", so only "€" (3 bytes) is kept
    "exit=0 signal=null truncated=true\n€",
    "exit=0 signal=null truncated=false\nto-stderr\n",
    "exit=0 signal=null truncated=false\nno limit",
  ], "exit statuses and outputs");
  const calls = toolCalls(turn.updates);
  eq(calls.map((c) => c.kind), ["execute", "execute", "execute", "execute"], "tool call kinds");
  for (const c of calls) eq(c.locations, [{ path: t.host("") }], `locations of "${c.title}"`);
  eq(calls.map((c) => statuses(turn.updates, c.toolCallId)), [["failed"], ["completed"], ["completed"], ["completed"]], "statuses");
  if (t.unwrapped)
    for (const c of calls) eq(c.content?.map((x) => x.type), ["terminal"], `content of "${c.title}" embeds the terminal`);
}

/** @param {RunContext} t */
async function permissionAsked(t) {
  const { editor, ws } = await t.start({});
  await editor.initialize();
  const { sessionId } = await editor.newSession(ws);
  editor.policy = t.policy((req) => choose(req, req.toolCall.title === "Deploy to staging?" ? "allow_once" : "reject_once"));
  const turn = await editor.prompt(sessionId, [{ ask: "Deploy to staging?" }, { ask: "Delete the database?" }, { say: "done" }]);
  eq(turn.stopReason, "end_turn", "stopReason");
  eq(turn.chunks, ["permission: allow", "permission: reject", "done"], "the options chosen, as the agent saw them");
  eq(turn.permissions.map((p) => p.toolCall.title), ["Deploy to staging?", "Delete the database?"], "permission titles");
  for (const p of turn.permissions) {
    eq(p.options.map((o) => o.kind), ["allow_once", "reject_once"], "option kinds");
    const call = toolCalls(turn.updates).find((c) => c.toolCallId === p.toolCall.toolCallId);
    eq(call?.title, p.toolCall.title, "the permission names a tool call sent before it");
  }
  const ids = turn.permissions.map((p) => p.toolCall.toolCallId);
  eq(ids.map((id) => statuses(turn.updates, id)), [["completed"], ["failed"]], "tool call statuses after the answers");

  editor.policy = t.policy(() => ({ outcome: { outcome: "cancelled" } }));
  const dismissed = await editor.prompt(sessionId, [{ ask: "Anything?" }, { say: "never" }]);
  eq(dismissed.stopReason, "cancelled", "stopReason when the permission request is answered cancelled");
  eq(dismissed.chunks, ["permission: cancelled"], "texts");
}

/** @param {RunContext} t */
async function cancelMidTurn(t) {
  const { editor, ws } = await t.start({});
  await editor.initialize();
  const { sessionId } = await editor.newSession(ws);
  const pending = editor.prompt(sessionId, [{ say: "before" }, { sleep: 60000 }, { say: "after" }]);
  await editor.until(() => textChunks(editor.notifications.map((n) => n.update), "agent_message_chunk").includes("before"),
    t.turnTimeoutMs, "the first chunk");
  const start = Date.now();
  await editor.cancel(sessionId);
  const turn = await pending;
  const ms = Date.now() - start;
  eq(turn.stopReason, "cancelled", "stopReason after session/cancel");
  eq(turn.chunks, ["before"], "texts of the cancelled turn");
  ok(ms < 10000, `the turn ended ${ms} ms after session/cancel (limit 10000)`);
  const again = await editor.prompt(sessionId, [{ say: "still here" }]);
  eq([again.stopReason, again.chunks], ["end_turn", ["still here"]], "the next turn after a cancel");

  // A cancel sent right after the prompt, before anything came back, still ends that turn.
  const quick = editor.prompt(sessionId, [{ sleep: 60000 }, { say: "never" }]);
  await editor.cancel(sessionId);
  eq((await quick).stopReason, "cancelled", "stopReason when session/cancel follows the prompt at once");
}

/** @param {RunContext} t */
async function agentCrash(t) {
  const { editor, ws } = await t.start({});
  await editor.initialize();
  const { sessionId } = await editor.newSession(ws);
  /** @type {any} */
  let error = null;
  await editor.prompt(sessionId, [{ say: "going down" }, { crash: 3 }]).catch((e) => (error = e));
  ok(error, "the prompt of a crashed agent ends with an error");
  eq(textChunks(editor.notifications.map((n) => n.update), "agent_message_chunk"), ["going down"], "texts before the crash");
  if (t.unwrapped) {
    eq(await editor.exited, { code: 3, signal: null }, "the agent's exit status");
  } else {
    ok(typeof error.code === "number", `the wrapper answers the prompt with a JSON-RPC error (got ${error})`);
    let again = null;
    await editor.prompt(sessionId, [{ say: "anyone?" }]).catch((e) => (again = e));
    ok(again, "a prompt on the session after the inner agent crashed ends with an error");
  }
}

/** @type {Array<{ name: string, run: (t: RunContext) => Promise<void> }>} */
export const scenarios = [
  { name: "turn-streams-text", run: turnStreamsText },
  { name: "write-then-read", run: writeThenRead },
  { name: "terminal-output-limit", run: terminalOutputLimit },
  { name: "permission-asked", run: permissionAsked },
  { name: "cancel-mid-turn", run: cancelMidTurn },
  { name: "agent-crash", run: agentCrash },
];
