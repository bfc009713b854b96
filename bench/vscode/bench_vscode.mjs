// The VS Code extension's two waits, through its own core modules (extensions/vscode/src/core,
// compiled to out/ by its test build) against the real lockroom:
//  1. activation → first sandbox ready: what the extension does on its first command — start
//     `lockroom serve --stdio` (the bridge to the shared server), initialize, sandbox/create on a
//     workspace — next to the peer `lockroom run --discard -- true` on the same workspace (the
//     CLI's whole one-shot run), in the same run;
//  2. review refresh for 100 changed files: from the end of the guest command that wrote them to
//     the review model's listing of all 100 (driven by changes/changed, no poll), next to `git
//     status --porcelain` on a host checkout holding the same 100 changes.
// Medians of N runs; prints a Markdown table.
//   node bench/vscode/bench_vscode.mjs --lockroom BIN [--runs N]
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const core = path.resolve(here, "../../extensions/vscode/out/src/core");
const { LockroomClient } = await import(path.join(core, "client.js"));
const { ProcessHub } = await import(path.join(core, "processes.js"));
const { SandboxReview } = await import(path.join(core, "review.js"));

const arg = (name, dflt) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : dflt);
const lockroom = path.resolve(arg("--lockroom", "build/bin/lockroom"));
const runs = Number(arg("--runs", "7"));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function workspace() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lockroom-bench-vscode-"));
  for (let i = 0; i < 100; i++) fs.writeFileSync(path.join(dir, `f${String(i).padStart(3, "0")}.txt`), `file ${i}\n`);
  const git = (...a) => execFileSync("git", a, { cwd: dir, stdio: "ignore" });
  git("init", "-q", "-b", "main");
  git("add", "-A");
  git("-c", "user.name=b", "-c", "user.email=b@example.invalid", "commit", "-q", "-m", "start");
  return dir;
}

const serverDir = fs.mkdtempSync(path.join(os.tmpdir(), "lockroom-bench-server-"));
const rows = { ready: [], run: [], refresh: [], gitStatus: [] };
for (let i = 0; i <= runs; i++) {
  const ws = workspace();
  // 1. The extension's first command.
  const t0 = performance.now();
  const client = await LockroomClient.start({ lockroom, serveArgs: ["--server-dir", serverDir, "--idle-exit", "30"] });
  const { sandboxId } = await client.request("sandbox/create", { workspace: ws, resources: { memoryMiB: 512, cpus: 1 } });
  const ready = performance.now() - t0;
  const t1 = performance.now();
  const run = spawnSync(lockroom, ["run", "--discard", "--", "true"], { cwd: ws, stdio: "ignore" });
  const oneShot = performance.now() - t1;
  if (run.status !== 0) throw new Error(`lockroom run exited ${run.status}`);

  // 2. 100 files changed by one guest command; the model lists them by itself.
  const hub = new ProcessHub(client);
  const review = new SandboxReview(client, sandboxId);
  await review.refresh();
  const listed = new Promise((resolve) => review.onDidChange((v) => v.files.length === 100 && resolve(performance.now())));
  const p = await hub.start({ sandboxId, argv: ["sh", "-c", "for f in f*.txt; do echo changed >> $f; done"] });
  await p.exited();
  const exitedAt = performance.now();
  const refresh = (await listed) - exitedAt;
  for (let n = 0; n < 100; n++) fs.appendFileSync(path.join(ws, `f${String(n).padStart(3, "0")}.txt`), "changed\n");
  const t2 = performance.now();
  execFileSync("git", ["status", "--porcelain"], { cwd: ws });
  const gitStatus = performance.now() - t2;

  review.dispose();
  hub.dispose();
  await client.request("sandbox/destroy", { sandboxId });
  await client.close();
  fs.rmSync(ws, { recursive: true, force: true });
  if (i === 0) continue; // warm-up
  rows.ready.push(ready);
  rows.run.push(oneShot);
  rows.refresh.push(refresh);
  rows.gitStatus.push(gitStatus);
  process.stderr.write(`run ${i}: ready ${ready.toFixed(0)} ms, lockroom run ${oneShot.toFixed(0)} ms, refresh ${refresh.toFixed(0)} ms, git status ${gitStatus.toFixed(1)} ms\n`);
}
fs.rmSync(serverDir, { recursive: true, force: true });

const f = (x) => x.toFixed(1);
console.log(`VS Code extension core, median of ${runs} (after one warm-up), ms`);
console.log("| what | extension | peer | ratio |");
console.log("|---|---|---|---|");
console.log(`| first command → sandbox ready (serve --stdio + initialize + sandbox/create on a 100-file workspace) vs \`lockroom run --discard -- true\` there | ${f(median(rows.ready))} | ${f(median(rows.run))} | ${(median(rows.ready) / median(rows.run)).toFixed(2)}× |`);
console.log(`| 100 changed files: guest command's exit → review model lists all 100 (changes/changed) vs \`git status --porcelain\` on the host | ${f(median(rows.refresh))} | ${f(median(rows.gitStatus))} | ${(median(rows.refresh) / median(rows.gitStatus)).toFixed(1)}× |`);
