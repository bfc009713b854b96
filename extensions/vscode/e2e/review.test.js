// @ts-check
// The lockroom extension in a real VS Code (code-server + chromium), with the real lockroom:
// a sandbox made from the command palette, an "agent" working in a sandbox terminal (a pty in
// the guest) that edits two files, the review in Source Control — one hunk of one file
// accepted from the diff editor, the other file discarded — the host files checked byte for
// byte after each decision, a network approval answered from its notification, then a window
// reload in the middle of the agent's work: the sandbox, its terminal and its pending changes
// are there again. Screenshots of the lockroom view, the review diff and the approval.
//   e2e/run --vsix FILE --only review     (LOCKROOM_E2E_LOCKROOM: the lockroom binary)
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as os from "node:os";
import * as path from "node:path";
import { check, finish, onFailure, step } from "./tap.js";
import { requireVsixUnderTest, startCodeServer } from "./harness.js";

const lockroom = process.env.LOCKROOM_E2E_LOCKROOM;
const lockroomCache = process.env.LOCKROOM_CACHE_DIR || path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "lockroom");
if (!lockroom) throw new Error("set LOCKROOM_E2E_LOCKROOM to the lockroom binary (e2e/run --lockroom BIN does)");

const twenty = Array.from({ length: 20 }, (_, i) => `line ${i + 1}\n`).join("");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "lockroom-e2e-review-"));
const ws = path.join(tmp, "project");
const serverDir = path.join(tmp, "server");
fs.mkdirSync(ws);
fs.mkdirSync(serverDir, { mode: 0o700 });
fs.writeFileSync(path.join(ws, "a.txt"), twenty);
fs.writeFileSync(path.join(ws, "b.txt"), "b\n");
fs.writeFileSync(path.join(ws, "README.md"), "# project\n");
const git = (/** @type {string[]} */ ...args) => execFileSync("git", args, { cwd: ws, stdio: "ignore" });
git("init", "-q", "-b", "main");
git("add", "-A");
git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "start");
const read = (/** @type {string} */ name) => fs.readFileSync(path.join(ws, name), "utf8");

// A real HTTP server on the host's loopback for the approval (allowed by address, asked by name).
const server = http.createServer((req, res) => res.end(`hello from the host ${req.url}\n`));
await new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(undefined)));
const port = /** @type {import("node:net").AddressInfo} */ (server.address()).port;

/** @type {import("./harness.js").Workbench | undefined} */
let wb;
onFailure(async (n) => console.log(`  # screenshot: ${await wb?.screenshot(`failed-step-${n}`)}`));
const need = () => {
  if (!wb) throw new Error("no workbench");
  return wb;
};
/** @param {string} text */
const plain = (text) => text.replace(/\u00a0/g, " ");

/** Types a command line into the active terminal (xterm), then Enter. @param {string} line */
async function typeInTerminal(line) {
  const w = need();
  await w.page.locator(".terminal-wrapper.active .xterm, .xterm").last().click();
  await w.page.keyboard.type(line, { delay: 5 });
  await w.page.keyboard.press("Enter");
}

/** The terminal's visible text. */
async function terminalText() {
  return plain(await need().page.locator(".xterm-rows").last().innerText());
}

/** Waits until `fn` is true, polling. @param {() => Promise<boolean> | boolean} fn @param {number} ms @param {string} what */
async function until(fn, ms, what) {
  const end = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The SCM view's rows (file names and their letters). */
async function scmRows() {
  const rows = need().page.locator(".scm-view .monaco-list-row");
  return (await rows.allInnerTexts()).map((t) => plain(t).replace(/\s+/g, " ").trim());
}

await step("code-server starts with the extension; the lockroom view is there", async () => {
  wb = await startCodeServer({
    vsix: requireVsixUnderTest(),
    name: "review",
    workspace: ws,
    settings: {
      "lockroom.path": lockroom,
      "lockroom.serverArgs": ["--server-dir", serverDir, "--idle-exit", "2"],
      "lockroom.network.allow": [`127.0.0.1:${port}`],
      "lockroom.resources.memoryMiB": 512,
      "lockroom.resources.cpus": 1,
      // xterm's DOM renderer, so the test can read the terminal's text.
      "terminal.integrated.gpuAcceleration": "off",
    },
    // lockroom's own cache (images, templates) is the user's, as outside the test: the
    // harness gives code-server fresh XDG dirs, which would rebuild the guest image every run.
    env: { LOCKROOM_CACHE_DIR: lockroomCache },
  });
  await wb.page.locator('.part.activitybar [aria-label^="lockroom"]').first().click();
  await wb.page.locator(".pane-header", { hasText: "Sandboxes" }).waitFor();
  await wb.page.getByText("No sandbox for this workspace yet.").waitFor();
});

await step("New Sandbox for Workspace makes a sandbox with progress, shown in the Sandboxes view", async () => {
  const w = need();
  await w.runCommand("lockroom: New Sandbox for Workspace");
  // The kit quick pick: accept the defaults (none); then the size: the settings' (first).
  const kitsPick = w.page.locator('.quick-input-widget input.input[aria-label^="Kits for the sandbox"]');
  await kitsPick.waitFor({ state: "visible" });
  await w.page.keyboard.press("Enter");
  const sizePick = w.page.locator('.quick-input-widget input.input[aria-label^="Size of the sandbox"]');
  await sizePick.waitFor({ state: "visible" });
  const first = plain(await w.page.locator(".quick-input-widget .monaco-list-row").first().innerText());
  check(first.includes("1 CPU, 512 MiB") && first.includes("from the lockroom.resources settings"), `the first size offered: ${JSON.stringify(first)}`);
  await w.page.keyboard.press("Enter");
  const row = w.page.locator(".pane", { hasText: "Sandboxes" }).locator(".monaco-list-row", { hasText: "VS Code: project" });
  await row.waitFor({ timeout: 120_000 });
  await until(async () => plain(await row.innerText()).includes("ready"), 120_000, "the sandbox ready in the view");
  const text = plain(await row.innerText());
  check(/ready · (KVM|TCG)/.test(text), `the sandbox row says ${JSON.stringify(text)}`);
  await w.screenshot("1-lockroom-view");
});

await step("an agent in a sandbox terminal edits two files; the host is untouched", async () => {
  const w = need();
  const before = read("a.txt") + read("b.txt");
  await w.runCommand("lockroom: Open Terminal in Sandbox");
  await w.page.locator(".xterm").last().waitFor();
  await until(async () => /[#$] *$/m.test(await terminalText()), 60_000, "a shell prompt in the guest terminal");
  await typeInTerminal("cd /workspace && sed -i -e 's/^line 2$/line 2 by the agent/' -e 's/^line 18$/line 18 by the agent/' a.txt && echo 'b by the agent' > b.txt && echo agent-done");
  await until(async () => (await terminalText()).includes("agent-done\n") || /agent-done\s*$/m.test(await terminalText()), 30_000, "the agent's edits");
  check(read("a.txt") + read("b.txt") === before, "the host files changed before any accept");
});

await step("Source Control lists the two files; accepting one hunk in the diff editor writes only it", async () => {
  const w = need();
  await w.runCommand("lockroom: Review Changes");
  await until(async () => {
    const rows = await scmRows();
    return rows.some((r) => r.startsWith("a.txt")) && rows.some((r) => r.startsWith("b.txt"));
  }, 30_000, "a.txt and b.txt in Source Control");
  await w.page.locator(".scm-view .monaco-list-row", { hasText: "a.txt" }).first().click();
  const diff = w.page.locator(".monaco-diff-editor");
  await diff.locator(".editor.modified .view-lines", { hasText: "line 2 by the agent" }).waitFor();
  const accept = w.page.locator(".codelens-decoration a", { hasText: "Accept change" });
  await until(async () => (await accept.count()) === 2, 30_000, "two Accept change lenses (two hunks)");
  await w.screenshot("2-review-diff");
  await accept.first().click();
  await until(() => read("a.txt") === twenty.replace("line 2\n", "line 2 by the agent\n"), 30_000, "a.txt with the top hunk only");
  check(read("b.txt") === "b\n", "b.txt untouched by the hunk accept");
  // The diff reopens on the new view: one hunk left to decide.
  await until(async () => (await w.page.locator(".codelens-decoration a", { hasText: "Accept change" }).count()) === 1, 30_000, "one hunk left");
});

await step("discarding b.txt undoes it in the sandbox only", async () => {
  const w = need();
  const row = w.page.locator(".scm-view .monaco-list-row", { hasText: "b.txt" }).last();
  await row.hover();
  await row.locator('.action-label[aria-label="Discard File in Sandbox"]').click();
  await w.page.locator(".monaco-dialog-box .monaco-button", { hasText: "Discard" }).click();
  await until(async () => !(await scmRows()).some((r) => r.startsWith("b.txt")), 30_000, "b.txt gone from the review");
  check(read("b.txt") === "b\n", `host b.txt is ${JSON.stringify(read("b.txt"))}`);
  check(read("a.txt") === twenty.replace("line 2\n", "line 2 by the agent\n"), "host a.txt keeps only the accepted hunk");
});

await step("a host nobody allowed is asked in a notification; Allow once lets the request through", async () => {
  const w = need();
  await w.clearNotifications();
  await w.page.locator(".terminal-wrapper, .xterm").last().click();
  await typeInTerminal(`export no_proxy= NO_PROXY=; wget -q -O - http://localhost:${port}/approved`);
  const text = await w.waitForNotification(`wants to reach localhost:${port}`);
  check(text.includes("over http"), `the question says ${JSON.stringify(text)}`);
  const allow = w.page.locator(".notification-toast .monaco-button", { hasText: "Allow once" }).first();
  await allow.waitFor({ state: "visible" });
  await new Promise((r) => setTimeout(r, 500)); // past the toast's fade-in, for the screenshot
  await w.screenshot("3-approval");
  await allow.click();
  await until(async () => (await terminalText()).includes("hello from the host /approved"), 30_000, "the response in the terminal");
});

await step("a reload in the middle of the agent's work: the sandbox, its terminal and its changes come back", async () => {
  const w = need();
  await typeInTerminal("sleep 4; echo finished-while-reloading > c.txt; echo still-here");
  await w.reload();
  await w.page.locator('.part.activitybar [aria-label^="lockroom"]').first().click();
  const row = w.page.locator(".pane", { hasText: "Sandboxes" }).locator(".monaco-list-row", { hasText: "VS Code: project" });
  await row.waitFor({ timeout: 60_000 });
  await until(async () => (await terminalText().catch(() => "")).includes("re-attached"), 60_000, "the terminal re-attached");
  await until(async () => (await terminalText()).includes("still-here"), 60_000, "the command that ran across the reload finished in the same terminal");
  await w.runCommand("lockroom: Review Changes");
  await until(async () => {
    const rows = await scmRows();
    return rows.some((r) => r.startsWith("a.txt")) && rows.some((r) => r.startsWith("c.txt"));
  }, 60_000, "a.txt (its other hunk) and c.txt in Source Control after the reload");
  check(!fs.existsSync(path.join(ws, "c.txt")), "c.txt is only in the sandbox");
  await w.screenshot("4-after-reload");
});

await step("a hunk that meets the user's own edit is a conflict: their file is left alone and listed under Conflicts", async () => {
  const w = need();
  const mine = read("a.txt").replace("line 18\n", "line 18 by the user\n");
  fs.writeFileSync(path.join(ws, "a.txt"), mine);
  // lockroom's row (it has the Apply File action), not git's for the same file.
  await w.page.locator('.scm-view .monaco-list-row:has(.action-label[aria-label="Apply File"])', { hasText: "a.txt" }).first().click();
  const accept = w.page.locator(".codelens-decoration a", { hasText: "Accept change" });
  await until(async () => (await accept.count()) === 1, 30_000, "the remaining hunk's Accept change");
  await accept.first().click();
  const text = await w.waitForNotification("conflict");
  check(/1 conflict \(a\.txt\), nothing written to it/.test(text), `the outcome says ${JSON.stringify(text)}`);
  check(read("a.txt") === mine, "the user's a.txt was changed by a conflicting accept");
  await w.page.locator(".scm-view .monaco-list-row", { hasText: "Conflicts with your edits" }).waitFor();
  await w.screenshot("5-conflict");
  // The notification's "Resolve in Merge Editor" opens VS Code's merge editor (an internal
  // command, _open.mergeEditor) on the user's file, with their side and the sandbox's.
  await w.page.locator(".notification-toast .monaco-button", { hasText: "Resolve in Merge Editor" }).first().click();
  const tab = w.page.locator(".tabs-container .tab.active");
  await until(async () => plain(await tab.innerText()).includes("Merging: a.txt"), 30_000, "the merge editor's tab (Merging: a.txt)").catch(async (e) => {
    const tabs = await w.page.locator(".tabs-container .tab").allInnerTexts();
    const toasts = await w.page.locator(".notification-toast").allInnerTexts();
    throw new Error(`${e instanceof Error ? e.message : e}; tabs ${JSON.stringify(tabs)}; notifications ${JSON.stringify(toasts)}`);
  });
  const merge = w.page.locator(".merge-editor");
  await merge.getByText("Yours", { exact: true }).first().waitFor();
  await merge.getByText("Sandbox", { exact: true }).first().waitFor();
  await merge.locator(".view-lines", { hasText: "line 18 by the user" }).first().waitFor();
  await merge.locator(".view-lines", { hasText: "line 18 by the agent" }).first().waitFor();
  await w.screenshot("6-merge-editor");
  check(read("a.txt") === mine, "resolving changed the user's a.txt before they saved anything");
  await w.runCommand("View: Close All Editors");
  const dontSave = w.page.locator(".monaco-dialog-box .monaco-button", { hasText: "Don't Save" });
  if (await dontSave.count()) await dontSave.click();
  fs.writeFileSync(path.join(ws, "a.txt"), twenty.replace("line 2\n", "line 2 by the agent\n"));
});

await step("Save as Branch commits what is left to decide to lockroom/<name>; the checkout stays", async () => {
  const w = need();
  const head = execFileSync("git", ["rev-parse", "HEAD"], { cwd: ws, encoding: "utf8" }).trim();
  const before = read("a.txt");
  await w.runCommand("lockroom: Save Changes as Branch");
  const box = w.page.locator(".quick-input-widget input.input");
  await box.waitFor({ state: "visible" });
  await box.fill("e2e-review");
  await w.page.keyboard.press("Enter");
  await w.waitForNotification("saved as lockroom/e2e-review");
  const saved = execFileSync("git", ["show", "lockroom/e2e-review:c.txt"], { cwd: ws, encoding: "utf8" });
  check(saved === "finished-while-reloading\n", `c.txt on the branch: ${JSON.stringify(saved)}`);
  check(execFileSync("git", ["rev-parse", "HEAD"], { cwd: ws, encoding: "utf8" }).trim() === head, "HEAD moved");
  check(read("a.txt") === before && !fs.existsSync(path.join(ws, "c.txt")), "the checkout changed");
});

await step("the sandbox ends when destroyed; the host keeps only what was accepted", async () => {
  const w = need();
  await w.runCommand("lockroom: Destroy Sandbox");
  await w.page.locator(".monaco-dialog-box .monaco-button", { hasText: "Destroy" }).click();
  const row = w.page.locator(".pane", { hasText: "Sandboxes" }).locator(".monaco-list-row", { hasText: "VS Code: project" });
  await until(async () => (await row.count()) === 0 || plain(await row.innerText()).includes("gone"), 60_000, "the sandbox gone");
  check(read("a.txt") === twenty.replace("line 2\n", "line 2 by the agent\n") && read("b.txt") === "b\n", "host files");
}, { independent: false });

await step("close leaves nothing behind", async () => {
  // The shared lockroom server exits by itself once it has no connection and no sandbox.
  const serverGone = () => {
    try {
      return !execFileSync("pgrep", ["-f", `serve --server --server-dir ${serverDir}`], { encoding: "utf8" }).trim();
    } catch {
      return true; // pgrep exits 1 when nothing matches
    }
  };
  const stragglers = (await wb?.close()) ?? [];
  await until(serverGone, 30_000, "the lockroom server gone after its idle time");
  check(stragglers.length === 0, `close had to kill: ${stragglers.join("; ")}`);
  server.close();
  fs.rmSync(tmp, { recursive: true, force: true });
}, { independent: true });

finish();
