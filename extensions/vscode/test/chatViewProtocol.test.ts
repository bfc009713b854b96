// The chat view's message protocol (src/webview/chat/protocol.ts): every message the webview may
// send is accepted exactly as it is, anything else — wrong types, empty or oversized strings,
// negative or fractional ids, unknown commands — is refused; only http(s) links are openable.
import assert from "node:assert/strict";
import { test } from "node:test";
import { commandNames, isOpenableLink, maxPromptChars, parseFromWebview, type FromWebview } from "../src/webview/chat/protocol.js";

test("chatView protocol: each valid message parses to itself", () => {
  const valid: FromWebview[] = [
    { type: "ready" },
    { type: "resync" },
    { type: "start", agent: "Claude Code" },
    { type: "cancelStart" },
    { type: "prompt", text: "fix the tests\nplease" },
    { type: "cancel" },
    { type: "answer", questionId: "q1", optionId: "apply" },
    { type: "setMode", modeId: "plan" },
    { type: "openLink", href: "https://example.org/" },
    { type: "openFile", path: "/ws/a.txt", line: 3 },
    { type: "openFile", path: "/ws/a.txt", line: null },
    { type: "openDiff", entryId: 7, index: 0 },
    { type: "fileAction", entryId: 9, path: "src/a.ts", action: "apply" },
    { type: "fileAction", entryId: 9, path: "src/a.ts", action: "discard" },
    ...commandNames.map((name): FromWebview => ({ type: "command", name })),
  ];
  for (const m of valid) assert.deepEqual(parseFromWebview(m), m, JSON.stringify(m));
});

test("chatView protocol: fields beyond a message's own are dropped", () => {
  assert.deepEqual(parseFromWebview({ type: "cancel", extra: 1 }), { type: "cancel" });
  assert.deepEqual(parseFromWebview({ type: "start", agent: "x", kits: ["evil"] }), { type: "start", agent: "x" });
});

test("chatView protocol: malformed messages are refused", () => {
  const invalid: unknown[] = [
    null,
    undefined,
    "ready",
    42,
    [],
    [{ type: "ready" }],
    {},
    { type: "nope" },
    { type: "start" },
    { type: "start", agent: "" },
    { type: "start", agent: 3 },
    { type: "start", agent: "x".repeat(64 * 1024 + 1) },
    { type: "prompt", text: "" },
    { type: "prompt", text: "  \n\t" },
    { type: "prompt", text: "x".repeat(maxPromptChars + 1) },
    { type: "answer", questionId: "q1" },
    { type: "answer", questionId: "q1", optionId: null },
    { type: "openFile", path: "/a", line: -1 },
    { type: "openFile", path: "/a", line: 1.5 },
    { type: "openFile", path: "/a" },
    { type: "openDiff", entryId: "7", index: 0 },
    { type: "openDiff", entryId: 7, index: -1 },
    { type: "fileAction", entryId: 9, path: "a", action: "delete" },
    { type: "fileAction", entryId: 9, action: "apply" },
    { type: "command", name: "rm -rf" },
    { type: "command", name: "toString" },
    { type: "command" },
  ];
  for (const m of invalid) assert.equal(parseFromWebview(m), undefined, JSON.stringify(m));
});

test("chatView protocol: only http and https links are opened", () => {
  for (const href of ["https://example.org/a?b=c", "http://localhost:8080/"]) assert.equal(isOpenableLink(href), true, href);
  for (const href of ["javascript:alert(1)", "file:///etc/passwd", "command:workbench.action.quit", "vscode://x", "data:text/html,hi", "/relative", "not a url", ""])
    assert.equal(isOpenableLink(href), false, href);
});
