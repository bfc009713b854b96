// @ts-check
// The harness's own test: code-server with the fixture extension (fixture/), each of its UIs
// driven through chromium, a screenshot of each into the output dir, a window reload, and no
// code-server or chromium process left behind. Prints TAP-like lines and "N passed, N failed".
import { check, finish, onFailure, step } from "./tap.js";
import { fixtureVsix, markedProcesses, startCodeServer } from "./harness.js";

const started = Date.now();
/** @type {import("./harness.js").Workbench | undefined} */
let wb;

onFailure(async (number) => console.log(`  # screenshot: ${await wb?.screenshot(`failed-step-${number}`)}`));

/** @param {string} text monaco renders spaces as no-break spaces */
const plain = (text) => text.replace(/\u00a0/g, " ");

await step("code-server starts with the fixture and the workbench is ready", async () => {
  wb = await startCodeServer({ vsix: fixtureVsix, name: "smoke" });
  const t = wb.timings;
  console.log(`# install ${t.installExtension} ms, code-server ${t.codeServerStart} ms, ` +
    `chromium ${t.chromiumStart} ms, workbench ready ${t.workbenchReady} ms`);
  await wb.screenshot("1-workbench");
});

await step("a command shows its notification", async () => {
  if (!wb) throw new Error("no workbench");
  await wb.runCommand("Lockroom Fixture: Say Hello");
  const text = await wb.waitForNotification("Hello from the lockroom fixture");
  check(text === "Hello from the lockroom fixture", `notification says "${text}"`);
  check((await wb.notifications()).includes(text), "notifications() misses the toast");
  await wb.screenshot("2-notification");
  await wb.clearNotifications();
});

const items = ["Alpha item", "Beta item", "Gamma item"];
/** @param {import("./harness.js").Workbench} wb */
async function treeShowsItems(wb) {
  const view = wb.page.locator(".part.sidebar .pane", { hasText: "Fixture Items" });
  await view.locator(".monaco-list-row", { hasText: "Gamma item" }).waitFor({ state: "visible" });
  const rows = (await view.locator(".monaco-list-row").allInnerTexts()).map((row) => row.trim());
  check(JSON.stringify(rows) === JSON.stringify(items), `the tree shows ${JSON.stringify(rows)}`);
}

await step("the activity-bar view lists the tree's three items", async () => {
  if (!wb) throw new Error("no workbench");
  await wb.page.locator('.part.activitybar [aria-label^="Lockroom Fixture"]').first().click();
  await treeShowsItems(wb);
  await wb.screenshot("3-tree-view");
});

await step("the webview panel talks both ways with the extension", async () => {
  if (!wb) throw new Error("no workbench");
  await wb.runCommand("Lockroom Fixture: Open Panel");
  const panel = wb.page.frameLocator("iframe.webview.ready").frameLocator("#active-frame");
  await panel.locator("#status", { hasText: "connected, token" }).waitFor();
  await panel.locator("#text").fill("hello from the test");
  await panel.locator("#send").click();
  const text = await wb.waitForNotification("Webview says:");
  check(text === "Webview says: hello from the test (token ok)", `notification says "${text}"`);
  await wb.screenshot("4-webview");
  await wb.clearNotifications();
});

await step("the diff editor shows both virtual documents", async () => {
  if (!wb) throw new Error("no workbench");
  await wb.runCommand("Lockroom Fixture: Open Diff");
  const diff = wb.page.locator(".monaco-diff-editor");
  await diff.waitFor({ state: "visible" });
  const original = diff.locator(".editor.original .view-lines");
  const modified = diff.locator(".editor.modified .view-lines");
  await original.filter({ hasText: "left side" }).waitFor();
  await modified.filter({ hasText: "right side" }).waitFor();
  check(plain(await original.innerText()).startsWith("hello from the left side\nthis line is shared"),
    `the left editor shows ${JSON.stringify(await original.innerText())}`);
  check(plain(await modified.innerText()).startsWith("hello from the right side\nthis line is shared"),
    `the right editor shows ${JSON.stringify(await modified.innerText())}`);
  const tab = wb.page.locator(".tabs-container .tab.active");
  check((await tab.innerText()).includes("Fixture Diff"), `the active tab is "${await tab.innerText()}"`);
  await wb.screenshot("5-diff");
});

await step("after Developer: Reload Window the view is back", async () => {
  if (!wb) throw new Error("no workbench");
  const t = Date.now();
  await wb.reload();
  await treeShowsItems(wb);
  console.log(`# reload ${Date.now() - t} ms`);
  await wb.screenshot("6-after-reload");
});

await step("close leaves no code-server or chromium process behind", async () => {
  if (!wb) throw new Error("no workbench");
  const running = markedProcesses(wb.mark);
  check(running.some((p) => p.includes("code-server")) && running.some((p) => p.includes("chromium")),
    `before close, the marked processes are: ${running.join("; ")}`);
  const stragglers = await wb.close();
  check(stragglers.length === 0, `close had to kill: ${stragglers.join("; ")}`);
  const left = markedProcesses(wb.mark);
  check(left.length === 0, `still running: ${left.join("; ")}`);
}, { independent: true });

console.log(`# smoke test took ${((Date.now() - started) / 1000).toFixed(1)} s`);
finish();
