// @ts-check
// The Agent view (the chat) end to end: code-server with the extension under test (--vsix),
// the real lockroom ($LOCKROOM, else build/bin/lockroom) running the scripted ACP agent of lockroom's tests
// (tests/acp/scripted_agent.py, as the `acp-scripted` kit in a temp LOCKROOM_KIT_PATH) on a
// git workspace. It opens the view; an agent with a missing kit fails to start saying what to
// do; it starts the scripted agent, sends a turn that thinks, plans, answers in markdown and
// writes two files, checks the review card and that the host is untouched, opens one file's
// diff, applies, checks the host files, hides and shows the view (the transcript comes back);
// then a turn with a permission question whose changes are kept, one file discarded and the
// other applied from the card; the chat's sandbox in Source Control, where one hunk of a file is
// accepted in the diff editor and another file rejected; Reload Window in the middle of a turn,
// after which the chat resumes on the same sandbox with its pending changes; Stop; New Agent
// Chat during a turn (asks, then ends lockroom); an agent crash shown as the turn's error, ending
// the chat; and closing leaves no process (the shared lockroom server exits when idle).
// Screenshots: out/chat-N-NAME.png (the window) and out/chat-N-NAME-view.png (the side bar).
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { check, finish, onFailure, step } from "./tap.js";
import { markedProcesses, outDir, requireVsixUnderTest, startCodeServer } from "./harness.js";
import { guestScript, kitName, makeKitDir } from "../../../tests/acp/driver/kit.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../../..");
const started = Date.now();
const agentTimeout = Number(process.env.LOCKROOM_E2E_AGENT_TIMEOUT_MS || 240000);
/** @type {import("./harness.js").Workbench | undefined} */
let wb;

onFailure(async (number) => console.log(`  # screenshot: ${await wb?.screenshot(`failed-step-${number}`)}`));

/** The lockroom binary: e2e/run --lockroom (LOCKROOM_E2E_LOCKROOM), $LOCKROOM, else a build of this repository. */
const lockroom = process.env.LOCKROOM_E2E_LOCKROOM || process.env.LOCKROOM ||
  ["build", "build-quick"].map((b) => path.join(repo, b, "bin/lockroom")).find((f) => fs.existsSync(f)) || "";
const temp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "lockroom-e2e-chat-")));
process.on("exit", () => fs.rmSync(temp, { recursive: true, force: true }));

/** The kit folder of the scripted agent, made by tests/acp/driver/kit.js (its one maker), removed at exit. */
function scriptedKit() {
  const dir = makeKitDir(path.join(repo, "tests/acp/scripted_agent.py"));
  process.on("exit", () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * A git repository with one commit holding `files`.
 * @param {Record<string, string>} files
 */
function gitWorkspace(files) {
  const dir = path.join(temp, "workspace");
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  const git = (/** @type {string[]} */ ...args) => execFileSync("git", args, { cwd: dir, stdio: "ignore" });
  git("init", "-q", "-b", "main");
  git("add", "-A");
  git("-c", "user.name=test", "-c", "user.email=test@example.invalid", "commit", "-q", "-m", "start");
  return dir;
}

/** lockroom's cache and state as this user has them: the harness gives code-server fresh XDG dirs. */
function lockroomDirs() {
  const home = os.homedir();
  return {
    LOCKROOM_CACHE_DIR: process.env.LOCKROOM_CACHE_DIR || path.join(process.env.XDG_CACHE_HOME || path.join(home, ".cache"), "lockroom"),
    LOCKROOM_STATE_DIR: process.env.LOCKROOM_STATE_DIR || path.join(process.env.XDG_STATE_HOME || path.join(home, ".local/state"), "lockroom"),
  };
}

/** @param {object[]} steps a scripted turn: the prompt is the JSON list of steps */
const script = (...steps) => JSON.stringify(steps);
/** @param {string} file */
const hostFile = (file) => (fs.existsSync(path.join(workspace, file)) ? fs.readFileSync(path.join(workspace, file), "utf8") : null);
/** @param {string} text monaco renders spaces as no-break spaces */
const plain = (text) => text.replace(/\u00a0/g, " ");

const twenty = Array.from({ length: 20 }, (_, i) => `line ${i + 1}\n`).join("");
const workspace = gitWorkspace({ "edit.txt": "old line\nshared line\n", "keep.txt": "keep\n", "long.txt": twenty });
const serverDir = path.join(temp, "server");
fs.mkdirSync(serverDir, { mode: 0o700 });

/** @param {() => Promise<boolean> | boolean} fn @param {number} ms @param {string} what */
async function until(fn, ms, what) {
  const end = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Shows the lockroom container in the side bar (clicking its icon when it is shown would hide it). */
async function showLockroom() {
  if (!wb) throw new Error("no workbench");
  if (await wb.page.locator(".part.sidebar .pane-header", { hasText: "Agent" }).first().isVisible()) return;
  await wb.page.locator('.part.activitybar [aria-label^="lockroom"]').first().click();
  await wb.page.locator(".part.sidebar .pane-header", { hasText: "Agent" }).first().waitFor();
}

/** The Source Control view's rows of lockroom's chat sandbox (they have the Apply File action). */
async function lockroomScmRows() {
  if (!wb) throw new Error("no workbench");
  const rows = wb.page.locator('.scm-view .monaco-list-row:has(.action-label[aria-label="Apply File"])');
  return (await rows.allInnerTexts()).map((t) => plain(t).replace(/\s+/g, " ").trim());
}

/** The chat webview's document. */
const chat = () => {
  if (!wb) throw new Error("no workbench");
  return wb.page.frameLocator("iframe.webview.ready").frameLocator("#active-frame");
};
/**
 * A screenshot of the window (out/chat-NAME.png) and a close-up of the side bar holding the
 * view (out/chat-NAME-view.png).
 * @param {string} name
 */
async function shot(name) {
  if (!wb) throw new Error("no workbench");
  await wb.screenshot(name);
  await wb.page.locator(".part.sidebar").screenshot({ path: path.join(outDir, `chat-${name}-view.png`) });
}

/** The lockroom acp processes of this workbench. */
const acpProcesses = () => (wb ? markedProcesses(wb.mark).filter((p) => / acp /.test(p) && p.includes("lockroom")) : []);

await step("code-server starts with the extension and the scripted agent configured", async () => {
  check(lockroom && fs.existsSync(lockroom), "set LOCKROOM to the lockroom binary (none in build/bin/ of this repository)");
  wb = await startCodeServer({
    vsix: requireVsixUnderTest(),
    name: "chat",
    workspace,
    settings: {
      "workbench.colorTheme": process.env.LOCKROOM_E2E_THEME || "Default Dark Modern",
      "lockroom.path": lockroom,
      // The window's and the chat's sandboxes live in a shared server of this test's own.
      "lockroom.serverArgs": ["--server-dir", serverDir, "--idle-exit", "2"],
      "lockroom.agents": [
        { name: "Scripted Agent", kits: [kitName], argv: ["python3", guestScript] },
        { name: "Missing Kit Agent", kits: ["no-such-kit"], argv: ["agent"] },
      ],
    },
    env: { LOCKROOM_KIT_PATH: scriptedKit(), ...lockroomDirs() },
  });
});

await step("the Agent view offers the agents and a Start button", async () => {
  if (!wb) throw new Error("no workbench");
  await wb.page.locator('.part.activitybar [aria-label^="lockroom"]').first().click();
  // The chat gets the whole side bar: the container's other views collapsed.
  for (const other of ["Sandboxes", "Network"]) {
    const header = wb.page.locator(".part.sidebar .pane-header.expanded", { hasText: other });
    if (await header.count()) await header.click();
  }
  const select = chat().locator("select.agent-select");
  await select.waitFor();
  const options = (await select.locator("option").allInnerTexts()).map((o) => o.trim());
  check(JSON.stringify(options) === JSON.stringify(["Claude Code", "Codex", "Scripted Agent", "Missing Kit Agent"]), `the picker offers ${JSON.stringify(options)}`);
  check(!(await chat().locator("textarea.prompt").isVisible()), "no prompt box before a start");
  await shot("1-welcome");
});

await step("an agent that cannot start says why and what to do", async () => {
  if (!wb) throw new Error("no workbench");
  await chat().locator("select.agent-select").selectOption("Missing Kit Agent");
  await chat().locator("button.start").click();
  const problem = chat().locator(".problem");
  await problem.waitFor({ timeout: agentTimeout });
  const title = (await problem.locator(".notice-title").innerText()).trim();
  check(title === "The kit “no-such-kit” does not exist", `the problem says "${title}"`);
  check(await problem.getByRole("button", { name: "Open Agent Settings" }).isVisible(), "it offers Open Agent Settings");
  check(acpProcesses().length === 0, `no lockroom acp process is left: ${acpProcesses().join("; ")}`);
  await shot("2-problem");
});

await step("Start runs the agent in a sandbox; the prompt box comes alive", async () => {
  if (!wb) throw new Error("no workbench");
  await chat().locator("select.agent-select").selectOption("Scripted Agent");
  await chat().locator("button.start").click();
  await chat().getByText("Starting Scripted Agent in a sandbox…").waitFor();
  await shot("3-starting");
  const t = Date.now();
  await chat().locator("textarea.prompt:enabled").waitFor({ timeout: agentTimeout });
  console.log(`# the agent started in ${Date.now() - t} ms`);
  check(acpProcesses().length === 1, `one lockroom acp process: ${acpProcesses().join("; ")}`);
});

await step("a turn streams thought, plan, markdown and two edits, then the review card asks", async () => {
  if (!wb) throw new Error("no workbench");
  const prompt = chat().locator("textarea.prompt");
  await prompt.fill(script(
    { think: "The user wants edit.txt updated and a new file." },
    { plan: [{ content: "Update edit.txt", priority: "high", status: "completed" }, { content: "Add new.txt", priority: "medium", status: "in_progress" }] },
    { say: "I will update **edit.txt** and add `new.txt`. See [the docs](https://example.org/docs)." },
    { write: "edit.txt", text: "new line\nshared line\n" },
    { write: "new.txt", text: "brand new\n" },
    { say: "Done: two files changed." },
  ));
  await prompt.press("Enter");
  const review = chat().locator(".review");
  await review.locator(".question button", { hasText: "Apply to my files" }).waitFor({ timeout: agentTimeout });
  check((await chat().locator(".markdown strong", { hasText: "edit.txt" }).count()) === 1, "the agent's markdown is rendered (bold)");
  check((await chat().locator("details.thought summary").innerText()).trim() === "Thinking", "the thought is a collapsed 'Thinking'");
  check((await chat().locator(".plan-item").count()) === 2, "the plan has two items");
  const files = (await review.locator(".file-line").allInnerTexts()).map((t) => t.replace(/\s+/g, " ").trim());
  check(files.length === 2 && /edit\.txt \+1 −1/.test(files[0] ?? "") && /new\.txt \+1 −0/.test(files[1] ?? ""), `the review lists ${JSON.stringify(files)}`);
  check(hostFile("edit.txt") === "old line\nshared line\n" && hostFile("new.txt") === null, "the host is unchanged while the review asks");
  await shot("4-review");
});

await step("Open Diff shows the file's change in VS Code's diff editor", async () => {
  if (!wb) throw new Error("no workbench");
  await chat().locator(".review .file", { hasText: "edit.txt" }).getByRole("button", { name: "Open the diff of edit.txt" }).click();
  const diff = wb.page.locator(".monaco-diff-editor");
  await diff.waitFor({ state: "visible" });
  const original = diff.locator(".editor.original .view-lines");
  const modified = diff.locator(".editor.modified .view-lines");
  await original.filter({ hasText: "old line" }).waitFor();
  await modified.filter({ hasText: "new line" }).waitFor();
  check(plain(await original.innerText()).startsWith("old line\nshared line"), `the left side shows ${JSON.stringify(await original.innerText())}`);
  check(plain(await modified.innerText()).startsWith("new line\nshared line"), `the right side shows ${JSON.stringify(await modified.innerText())}`);
  const tab = (await wb.page.locator(".tabs-container .tab.active").innerText()).trim();
  check(tab.includes("edit.txt (Sandbox Changes)"), `the diff's tab is "${tab}"`);
  await shot("5-diff");
});

await step("Apply to my files writes exactly the two files to the host", async () => {
  if (!wb) throw new Error("no workbench");
  await chat().locator(".review .question button", { hasText: "Apply to my files" }).click();
  await chat().locator(".review-outcome", { hasText: "Applied 2 files" }).waitFor({ timeout: agentTimeout });
  await chat().locator("textarea.prompt:enabled").waitFor();
  await chat().locator("button.send:visible").waitFor();
  check(hostFile("edit.txt") === "new line\nshared line\n", `edit.txt on the host: ${JSON.stringify(hostFile("edit.txt"))}`);
  check(hostFile("new.txt") === "brand new\n", `new.txt on the host: ${JSON.stringify(hostFile("new.txt"))}`);
  check(hostFile("keep.txt") === "keep\n", "keep.txt is untouched");
  await shot("6-applied");
});

await step("the transcript comes back after the view was hidden", async () => {
  if (!wb) throw new Error("no workbench");
  const entries = await chat().locator(".transcript .entry").count();
  const header = wb.page.locator(".part.sidebar .pane-header", { hasText: "Agent" }).first();
  await header.click(); // collapsed: the webview's page goes
  await wb.page.locator(".part.sidebar .pane-header:not(.expanded)", { hasText: "Agent" }).first().waitFor();
  await header.click();
  await chat().locator(".review-outcome", { hasText: "Applied 2 files" }).waitFor();
  const again = await chat().locator(".transcript .entry").count();
  check(again === entries, `${again} entries after the view came back, ${entries} before`);
});

await step("a permission question is answered from its card; kept changes are discarded or applied file by file", async () => {
  if (!wb) throw new Error("no workbench");
  const prompt = chat().locator("textarea.prompt");
  await prompt.fill(script({ ask: "Run the test suite?" }, { write: "b.txt", text: "B\n" }, { write: "c.txt", text: "C\n" }, { say: "Wrote b.txt and c.txt." }));
  await prompt.press("Enter");
  const asked = chat().locator(".tool", { hasText: "Run the test suite?" });
  await asked.locator(".question button", { hasText: "Allow" }).waitFor({ timeout: agentTimeout });
  check(await chat().locator("button.stop").isVisible(), "Stop is shown while the turn runs");
  await shot("7-question");
  await asked.locator(".question button", { hasText: "Allow" }).click();
  await asked.getByText("You chose: Allow").waitFor();
  const review = chat().locator(".review").last();
  await review.locator(".question button", { hasText: "Keep in the sandbox" }).click({ timeout: agentTimeout });
  await review.locator(".review-outcome", { hasText: "Not applied" }).waitFor({ timeout: agentTimeout });
  await shot("8-kept");
  await review.locator(".file", { hasText: "c.txt" }).getByRole("button", { name: "Discard the change of c.txt in the sandbox" }).click();
  await review.locator(".file", { hasText: "c.txt" }).locator(".file-state.state-discarded").waitFor({ timeout: agentTimeout });
  await review.locator(".file", { hasText: "b.txt" }).getByRole("button", { name: "Apply b.txt to your file" }).click();
  await review.locator(".file", { hasText: "b.txt" }).locator(".file-state.state-applied").waitFor({ timeout: agentTimeout });
  check(hostFile("b.txt") === "B\n", `b.txt on the host: ${JSON.stringify(hostFile("b.txt"))}`);
  check(hostFile("c.txt") === null, "c.txt was discarded, not applied");
  await shot("9-file-actions");
});

await step("the chat's sandbox is in Source Control: one hunk accepted in the diff editor, another file rejected", async () => {
  if (!wb) throw new Error("no workbench");
  const prompt = chat().locator("textarea.prompt");
  const agentLong = twenty.replace("line 2\n", "line 2 by the agent\n").replace("line 18\n", "line 18 by the agent\n");
  await prompt.fill(script({ write: "long.txt", text: agentLong }, { write: "other.txt", text: "other by the agent\n" }, { say: "Edited long.txt, added other.txt." }));
  await prompt.press("Enter");
  const review = chat().locator(".review").last();
  await review.locator(".question button", { hasText: "Keep in the sandbox" }).click({ timeout: agentTimeout });
  await review.locator(".review-outcome", { hasText: "Not applied" }).waitFor({ timeout: agentTimeout });
  await wb.runCommand("lockroom: Review Changes");
  await until(async () => {
    const rows = await lockroomScmRows();
    return rows.some((r) => r.startsWith("long.txt")) && rows.some((r) => r.startsWith("other.txt"));
  }, 60_000, "long.txt and other.txt under the chat's sandbox in Source Control");
  await wb.page.locator('.scm-view .monaco-list-row:has(.action-label[aria-label="Apply File"])', { hasText: "long.txt" }).first().click();
  const diff = wb.page.locator(".monaco-diff-editor");
  await diff.locator(".editor.modified .view-lines", { hasText: "line 2 by the agent" }).waitFor();
  const accept = wb.page.locator(".codelens-decoration a", { hasText: "Accept change" });
  await until(async () => (await accept.count()) === 2, 30_000, "two Accept change lenses (two hunks)");
  await shot("10-chat-scm");
  await accept.first().click();
  await until(() => hostFile("long.txt") === twenty.replace("line 2\n", "line 2 by the agent\n"), 30_000, "long.txt with the top hunk only");
  const other = wb.page.locator('.scm-view .monaco-list-row:has(.action-label[aria-label="Apply File"])', { hasText: "other.txt" }).first();
  await other.hover();
  await other.locator('.action-label[aria-label="Discard File in Sandbox"]').click();
  await wb.page.locator(".monaco-dialog-box .monaco-button", { hasText: "Discard" }).click();
  await until(async () => !(await lockroomScmRows()).some((r) => r.startsWith("other.txt")), 30_000, "other.txt gone from the review");
  check(hostFile("other.txt") === null, "other.txt was rejected, never written to the host");
  check(hostFile("long.txt") === twenty.replace("line 2\n", "line 2 by the agent\n"), "long.txt holds exactly the accepted hunk");
  await wb.runCommand("View: Close All Editors");
});

await step("Reload Window in the middle of a turn: the chat resumes on its sandbox, the pending changes with it", async () => {
  if (!wb) throw new Error("no workbench");
  const w = wb;
  await showLockroom();
  const prompt = chat().locator("textarea.prompt");
  await prompt.fill(script({ write: "late.txt", text: "written before the reload\n" }, { say: "Wrote late.txt; thinking on." }, { sleep: 60000 }));
  await prompt.press("Enter");
  await chat().locator(".markdown", { hasText: "Wrote late.txt; thinking on." }).waitFor({ timeout: agentTimeout });
  await w.reload();
  await showLockroom();
  await chat().locator(".notice", { hasText: "Resumed after the window reloaded" }).waitFor({ timeout: agentTimeout });
  await chat().locator("textarea.prompt:enabled").waitFor({ timeout: agentTimeout });
  check(acpProcesses().length === 1, `one lockroom acp process after the reload: ${acpProcesses().join("; ")}`);
  await shot("11-resumed");
  await w.runCommand("lockroom: Review Changes");
  await until(async () => {
    const rows = await lockroomScmRows();
    return rows.some((r) => r.startsWith("late.txt")) && rows.some((r) => r.startsWith("long.txt"));
  }, 60_000, "late.txt and long.txt's other hunk still to review after the reload");
  check(hostFile("late.txt") === null, "late.txt is only in the sandbox");
  await w.screenshot("12-after-reload-scm");
  await showLockroom();
});

await step("Stop ends a running turn", async () => {
  if (!wb) throw new Error("no workbench");
  const prompt = chat().locator("textarea.prompt");
  await prompt.fill(script({ say: "Working on it" }, { sleep: 60000 }, { say: "never said" }));
  await prompt.press("Enter");
  await chat().locator(".markdown", { hasText: "Working on it" }).waitFor({ timeout: agentTimeout });
  await chat().locator(".working", { hasText: "Scripted Agent is working" }).waitFor();
  await shot("13-working");
  await chat().locator("button.stop").click();
  await chat().locator(".turn-end", { hasText: "Stopped." }).waitFor({ timeout: 30000 });
  await chat().locator("button.send:visible").waitFor();
});

await step("New Agent Chat while the agent works asks first, then ends the chat and its lockroom process", async () => {
  if (!wb) throw new Error("no workbench");
  const prompt = chat().locator("textarea.prompt");
  await prompt.fill(script({ say: "Busy" }, { sleep: 60000 }));
  await prompt.press("Enter");
  await chat().locator("button.stop").waitFor();
  await wb.runCommand("lockroom: New Agent Chat");
  const dialog = wb.page.locator(".monaco-dialog-box");
  await dialog.waitFor();
  const text = (await dialog.innerText()).replace(/\s+/g, " ");
  check(/End this chat\? Scripted Agent is working on your last message/.test(text), `the dialog says: ${text}`);
  await shot("14-confirm");
  await dialog.getByRole("button", { name: "End Chat" }).click();
  await chat().locator("button.start").waitFor({ timeout: 30000 });
  const deadline = Date.now() + 30000;
  while (acpProcesses().length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
  check(acpProcesses().length === 0, `lockroom acp still runs: ${acpProcesses().join("; ")}`);
  check((await chat().locator(".transcript .entry").count()) === 0, "the transcript is cleared");
  await shot("15-new-chat");
});

await step("an agent crash shows as the turn's error and ends the chat", async () => {
  if (!wb) throw new Error("no workbench");
  await chat().locator("select.agent-select").selectOption("Scripted Agent");
  await chat().locator("button.start").click();
  await chat().locator("textarea.prompt:enabled").waitFor({ timeout: agentTimeout });
  const prompt = chat().locator("textarea.prompt");
  await prompt.fill(script({ say: "Here goes" }, { crash: 3 }));
  await prompt.press("Enter");
  const error = chat().locator(".notice-error", { hasText: "The turn failed" });
  await error.waitFor({ timeout: agentTimeout });
  const text = await error.innerText();
  check(/the agent exited \(exit code 3/.test(text), `the error says: ${text}`);
  await chat().locator(".ended-banner", { hasText: "To go on, start a new chat." }).waitFor();
  check(!(await chat().locator("textarea.prompt").isVisible()), "no prompt box once the agent is gone");
  const deadline = Date.now() + 30000;
  while (acpProcesses().length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
  check(acpProcesses().length === 0, `lockroom acp still runs: ${acpProcesses().join("; ")}`);
  await shot("16-crash");
});

await step("closing the window ends the chat: no process is left behind", async () => {
  if (!wb) throw new Error("no workbench");
  // The shared lockroom server exits by itself once it has no connection and no sandbox.
  const serverGone = () => {
    try {
      return !execFileSync("pgrep", ["-f", `serve --server --server-dir ${serverDir}`], { encoding: "utf8" }).trim();
    } catch {
      return true; // pgrep exits 1 when nothing matches
    }
  };
  const stragglers = await wb.close();
  await until(serverGone, 30_000, "the lockroom server gone after its idle time");
  check(stragglers.length === 0, `close had to kill: ${stragglers.join("; ")}`);
}, { independent: true });

console.log(`# chat test took ${((Date.now() - started) / 1000).toFixed(1)} s`);
finish();
