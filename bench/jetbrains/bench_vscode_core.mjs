// The same round trips as BenchCore.java, through the VS Code extension's core
// (extensions/vscode/src/core, compiled to out/ by its test build), so the two clients are
// measured against the same lockroom in the same run. Prints one JSON object of samples (ms).
//   node bench/jetbrains/bench_vscode_core.mjs --lockroom BIN [--runs N] [--warmup N]
import { execFileSync } from "node:child_process";
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
const runs = Number(arg("--runs", "30"));
const warmup = Number(arg("--warmup", "10"));

async function measure(w, n, op) {
  for (let i = 0; i < w; i++) await op();
  const out = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await op();
    out.push(performance.now() - t0);
  }
  return out;
}

const ws = fs.mkdtempSync(path.join(os.tmpdir(), "lockroom-bench-vscode-core-"));
for (let i = 0; i < 20; i++) fs.writeFileSync(path.join(ws, `f${String(i).padStart(2, "0")}.txt`), `file ${i}\n`);
const git = (...a) => execFileSync("git", a, { cwd: ws, stdio: "ignore" });
git("init", "-q", "-b", "main");
git("add", "-A");
git("-c", "user.name=b", "-c", "user.email=b@example.invalid", "commit", "-q", "-m", "start");

// A first start and close, as BenchCore.java does; the second start is measured.
await (await LockroomClient.start({ lockroom, serveArgs: ["--standalone"] })).close(15000);
const t0 = performance.now();
const client = await LockroomClient.start({ lockroom, serveArgs: ["--standalone"] });
const startMs = performance.now() - t0;
const hub = new ProcessHub(client);
try {
  const { sandboxId, accel } = await client.request("sandbox/create", { workspace: ws });
  const edit = await hub.start({ sandboxId, argv: ["sh", "-c", "cd /workspace && for f in f00.txt f01.txt f02.txt; do echo changed >> $f; done"] });
  await edit.exited();
  const review = new SandboxReview(client, sandboxId);
  const out = { client: "vscode", accel, startMs };
  out.echo = await measure(warmup * 5, runs * 5, () => client.request("lockroom/echo", { ping: 1 }));
  out.sandboxList = await measure(warmup * 5, runs * 5, () => client.request("sandbox/list", {}));
  out.processRun = await measure(warmup, runs, async () => (await hub.start({ sandboxId, argv: ["true"] })).exited());
  out.changesList = await measure(warmup, runs, async () => {
    const v = await review.refresh();
    if (v.files.length !== 3) throw new Error(`expected 3 changed files, listed ${v.files.length}`);
  });
  review.dispose();
  await client.request("sandbox/destroy", { sandboxId });
  console.log(JSON.stringify(out));
} finally {
  hub.dispose();
  await client.close(15000);
  fs.rmSync(ws, { recursive: true, force: true });
}
