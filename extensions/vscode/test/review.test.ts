// The review model against the real lockroom: refreshes driven by changes/changed, accept and
// reject per file and per hunk (hunk ids surviving a partial accept), exactly the reviewed bytes
// applied, a conflict with the user's own edit, a branch, and the host folder checked byte for
// byte after every step.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { test, type TestContext } from "node:test";
import { ProcessHub } from "../src/core/processes.js";
import { SandboxReview, describeApply, hunkAtLine, type ReviewView } from "../src/core/review.js";
import { gitWorkspace, snapshot, startClient, until } from "./support.js";

const twentyLines = Array.from({ length: 20 }, (_, i) => `line ${i + 1}\n`).join("");

async function sandboxOn(t: TestContext, files: Record<string, string>) {
  const ws = gitWorkspace(t, files);
  const client = await startClient(t);
  const { sandboxId } = await client.request("sandbox/create", { workspace: ws });
  const hub = new ProcessHub(client);
  const review = new SandboxReview(client, sandboxId);
  t.after(() => {
    review.dispose();
    hub.dispose();
  });
  const guest = async (script: string) => {
    const p = await hub.start({ sandboxId, argv: ["sh", "-c", script], cwd: "/workspace" });
    const r = await p.collect();
    assert.equal(r.exit.exitCode, 0, `guest: ${script}: ${r.stderr}`);
  };
  /** The next listing the model makes by itself (from changes/changed) that satisfies `ok`. */
  const nextView = (ok: (v: ReviewView) => boolean) =>
    new Promise<ReviewView>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("no changes/changed refresh within 30 s")), 30_000);
      const stop = review.onDidChange((v) => {
        if (!ok(v)) return;
        clearTimeout(timer);
        stop();
        resolve(v);
      });
    });
  return { ws, client, sandboxId, review, guest, nextView };
}

const paths = (v: ReviewView) => v.files.map((f) => `${f.status} ${f.path}`).sort();

test("accept and reject per file and per hunk; the host changes only by an accept", async (t) => {
  const s = await sandboxOn(t, { "a.txt": twentyLines, "b.txt": "b\n", "keep.txt": "keep\n" });
  const listed = s.nextView((v) => v.files.length === 3);
  await s.guest("sed -i -e 's/^line 2$/line 2 by the agent/' -e 's/^line 18$/line 18 by the agent/' a.txt && echo 'b by the agent' > b.txt && echo new > n.txt");
  const first = await listed; // no refresh() called: changes/changed drove it
  assert.deepEqual(paths(first), ["added n.txt", "modified a.txt", "modified b.txt"]);

  const a = await s.review.diff("a.txt");
  assert.equal(a.hunks.length, 2);
  const [top, bottom] = a.hunks;
  assert.equal(hunkAtLine(a, 2)?.id, top!.id);
  assert.equal(hunkAtLine(a, 18)?.id, bottom!.id);

  // Accept the top hunk of a.txt only: the host gets exactly that, the bottom hunk stays to decide.
  let before = snapshot(s.ws);
  const outcome = await s.review.accept([{ path: "a.txt", hunks: [top!.id] }]);
  assert.deepEqual(outcome.applied, ["a.txt"]);
  assert.equal(describeApply(outcome), "Applied 1 file.");
  assert.equal(fs.readFileSync(path.join(s.ws, "a.txt"), "utf8"), twentyLines.replace("line 2\n", "line 2 by the agent\n"));
  let after = snapshot(s.ws);
  for (const [file, bytes] of before) if (file !== "a.txt") assert.equal(after.get(file), bytes, `${file} unchanged`);
  const partly = s.review.view!;
  assert.deepEqual(paths(partly), ["added n.txt", "modified a.txt", "modified b.txt"]);
  const rest = await s.review.diff("a.txt");
  assert.deepEqual(rest.hunks.map((h) => h.id), [bottom!.id], "the hunk still to decide keeps its id");

  // Reject b.txt and the bottom hunk of a.txt: the guest goes back, the host does not move.
  before = snapshot(s.ws);
  assert.equal(await s.review.reject([{ path: "b.txt" }, { path: "a.txt", hunks: [bottom!.id] }]), 2);
  assert.deepEqual(snapshot(s.ws), before);
  assert.deepEqual(paths(s.review.view!), ["added n.txt"]);

  // Accept the rest: the new file.
  const last = await s.review.accept();
  assert.deepEqual(last.applied, ["n.txt"]);
  assert.equal(fs.readFileSync(path.join(s.ws, "n.txt"), "utf8"), "new\n");
  assert.equal(fs.readFileSync(path.join(s.ws, "b.txt"), "utf8"), "b\n");
  assert.deepEqual(paths(s.review.view!), []);
  after = snapshot(s.ws);
  assert.equal(after.get("keep.txt"), before.get("keep.txt"));
});

test("an accept writes the bytes of the view it names, not newer ones the list shows by then", async (t) => {
  const s = await sandboxOn(t, { "f.txt": "one\n" });
  await s.guest("echo reviewed > f.txt");
  const seen = await s.review.refresh();
  const sides = await s.review.sides("f.txt", seen.viewId);
  assert.equal(sides.base?.toString(), "one\n");
  assert.equal(sides.current?.toString(), "reviewed\n");
  // The agent writes again; the model's listing follows by itself (changes/changed).
  await s.guest("echo newer > f.txt");
  await until(() => s.review.view?.viewId !== seen.viewId, 30_000, "the model's own refresh");
  let latest = "";
  for (let i = 0; i < 50 && latest !== "newer\n"; i++) {
    latest = (await s.review.sides("f.txt")).current?.toString() ?? "";
    if (latest !== "newer\n") await s.review.refresh();
  }
  assert.equal(latest, "newer\n");
  // The diff editor still shows the view the user read: accepting from it writes those bytes.
  const outcome = await s.review.accept([{ path: "f.txt" }], seen.viewId);
  assert.deepEqual(outcome.applied, ["f.txt"]);
  assert.equal(fs.readFileSync(path.join(s.ws, "f.txt"), "utf8"), "reviewed\n");
  // What the agent wrote after it is still to decide.
  assert.deepEqual(paths(s.review.view!), ["modified f.txt"]);
  assert.equal((await s.review.sides("f.txt")).base?.toString(), "reviewed\n");
});

test("a conflict with the user's edit leaves their file alone and carries the merge text", async (t) => {
  const s = await sandboxOn(t, { "c.txt": "first\nsecond\n" });
  await s.guest("echo 'agent first' > c.txt && echo second >> c.txt");
  await s.review.refresh();
  fs.writeFileSync(path.join(s.ws, "c.txt"), "user first\nsecond\n");
  const outcome = await s.review.accept();
  assert.deepEqual(outcome.applied, []);
  assert.equal(outcome.conflicts.length, 1);
  assert.equal(outcome.conflicts[0]!.path, "c.txt");
  assert.match(outcome.conflicts[0]!.text, /<<<<<<<[\s\S]*user first[\s\S]*=======[\s\S]*agent first[\s\S]*>>>>>>>/);
  assert.equal(fs.readFileSync(path.join(s.ws, "c.txt"), "utf8"), "user first\nsecond\n");
  assert.match(describeApply(outcome), /1 conflict \(c\.txt\), nothing written to it/);
});

test("save as branch commits the changes without touching the checkout", async (t) => {
  const s = await sandboxOn(t, { "r.txt": "r\n" });
  await s.guest("echo 'r by the agent' > r.txt");
  await s.review.refresh();
  const before = snapshot(s.ws);
  const head = execFileSync("git", ["rev-parse", "HEAD"], { cwd: s.ws, encoding: "utf8" }).trim();
  const branch = await s.review.saveAsBranch("review-test");
  assert.equal(branch.created, true);
  assert.equal(branch.branch, "refs/heads/lockroom/review-test");
  const show = execFileSync("git", ["show", "lockroom/review-test:r.txt"], { cwd: s.ws, encoding: "utf8" });
  assert.equal(show, "r by the agent\n");
  assert.equal(execFileSync("git", ["rev-parse", "lockroom/review-test^"], { cwd: s.ws, encoding: "utf8" }).trim(), head);
  const after = snapshot(s.ws);
  for (const [file, bytes] of before) if (!file.startsWith(".git/")) assert.equal(after.get(file), bytes, `${file} unchanged`);
  assert.equal(execFileSync("git", ["rev-parse", "HEAD"], { cwd: s.ws, encoding: "utf8" }).trim(), head);
});
