// A bounded soak of one `lockroom serve --stdio --standalone`: for --minutes it keeps --sandboxes
// sandboxes alive, each with 4 processes streaming numbered lines, and at random intervals
//   - sends process/signal (SIGTERM, SIGINT, SIGKILL, spelled every accepted way) to a random
//     streaming process and starts a replacement when it has exited;
//   - sends $/cancelRequest for a random in-flight sandbox/create, changes/list or changes/diff
//     (and, inside reviews, changes/apply and changes/discard) and checks the documented answer;
//   - destroys a random sandbox (the population loop creates another);
//   - on the sandboxes with a workspace (one host git repository each, made by this script), runs
//     a process that edits, adds and deletes files, reviews (changes/list, changes/diff, checked
//     against a model of the files), applies some files naming the view it reviewed, sometimes
//     applies that stale view again (must be refused), and discards the others.
// Once a second it samples lockroom's RSS, open descriptors, threads, CPU time and QEMU children
// (samples.csv). At the end it destroys everything, shuts lockroom down and checks: no growth of
// RSS and descriptors (median of the first and last minute after warm-up, and descriptors with no
// sandbox before and after), every started process got exactly one process/exited, no QEMU left
// naming the soak's state dir, and each host repository holds exactly what the applies reported.
// Writes summary.md, summary.json, samples.csv, events.jsonl, lockroom.log and the plot soak.svg /
// soak.png (chromium, when there is one) into --out; exits 1 when a check failed.
//
//   node bench/soak/soak.mjs --lockroom BIN [--minutes 10] [--sandboxes 20] [--out DIR]
//        [--memory-mib 256] [--workspace-share 0.5] [--seed N] [--warmup-s S]
// bench/run-soak.sh wraps it.
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseArgs } from "node:util";
import { LockroomConnection } from "./rpc.mjs";
import { renderPlot } from "./plot.mjs";

// --- options ------------------------------------------------------------------------------------

const { values: opt } = parseArgs({
  options: {
    lockroom: { type: "string" },
    minutes: { type: "string", default: "10" },
    sandboxes: { type: "string", default: "20" },
    out: { type: "string" },
    "memory-mib": { type: "string", default: "256" },
    "workspace-share": { type: "string", default: "0.5" },
    seed: { type: "string" },
    "warmup-s": { type: "string" },
  },
});
if (!opt.lockroom) {
  console.error("usage: node bench/soak/soak.mjs --lockroom BIN [--minutes M] [--sandboxes N] [--out DIR]");
  process.exit(2);
}
const lockroomBin = path.resolve(opt.lockroom);
const minutes = Number(opt.minutes);
const target = Number(opt.sandboxes);
const memoryMiB = Number(opt["memory-mib"]);
const workspaceShare = Number(opt["workspace-share"]);
const seed = opt.seed !== undefined ? Number(opt.seed) : Date.now() % 1e9;
const outDir = path.resolve(opt.out ?? fs.mkdtempSync(path.join(os.tmpdir(), "lockroom-soak-")));
const durationMs = minutes * 60_000;
// Warm-up: the first creates boot templates and fill caches; growth is judged after it.
const warmupMs = opt["warmup-s"] !== undefined ? Number(opt["warmup-s"]) * 1000 : Math.min(120_000, durationMs / 4);

const stateDir = path.join(outDir, "state"); // lockroom's own state dir: its VMs, sockets, audit logs
const repoDir = path.join(outDir, "repos"); // the host workspaces
fs.rmSync(stateDir, { recursive: true, force: true });
fs.rmSync(repoDir, { recursive: true, force: true });
fs.mkdirSync(stateDir, { recursive: true });
fs.mkdirSync(repoDir, { recursive: true });

// Timings of the operations (the soak is not a timed test: these only shape the load).
const kStreamers = 4;
const kStream = 'i=0; while :; do echo "line $i"; i=$((i+1)); usleep 20000; done';
const kMeanSignalMs = 1500;
const kMeanCancelMs = 4000;
const kMeanDestroyMs = 12_000;
const kReviewPauseMs = [2000, 10_000];
const kAuditEveryMs = 10_000;
const kMaxCreatesInFlight = 2;
const kSlowAnswerMs = 120_000;

// --- small helpers ------------------------------------------------------------------------------

let rngState = seed >>> 0;
function random() {
  // mulberry32: the choices are reproducible from --seed (the timing is not).
  rngState = (rngState + 0x6d2b79f5) >>> 0;
  let t = rngState;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (xs) => xs[Math.floor(random() * xs.length)];
const chance = (p) => random() < p;
const between = (lo, hi) => lo + random() * (hi - lo);
const expDelay = (mean) => -Math.log(1 - random()) * mean;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const t0 = Date.now();
const elapsed = () => Date.now() - t0;
const median = (xs) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] : NaN);
const quantile = (xs, q) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))] : NaN);

const events = fs.createWriteStream(path.join(outDir, "events.jsonl"));
const log = (what, detail = {}) => events.write(JSON.stringify({ t: elapsed(), what, ...detail }) + "\n");

// Operations by kind and outcome: tally("process/signal", "ok").
const ops = new Map();
function tally(kind, outcome) {
  if (!ops.has(kind)) ops.set(kind, new Map());
  const m = ops.get(kind);
  m.set(outcome, (m.get(outcome) ?? 0) + 1);
}

// Everything lockroom did that it promises not to: the findings.
const anomalies = [];
function anomaly(check, message, detail = {}) {
  anomalies.push({ t: elapsed(), check, message });
  log("anomaly", { check, message, ...detail });
  process.stderr.write(`[${(elapsed() / 1000).toFixed(1)} s] ANOMALY (${check}): ${message}\n`);
}

const errText = (e) => `${e.code ?? ""} ${e.kind ?? ""} ${e.message}`.trim();

// --- lockroom -----------------------------------------------------------------------------------

const logFile = fs.createWriteStream(path.join(outDir, "lockroom.log"));
const logCounts = { warn: 0, error: 0, other: 0 };
const conn = new LockroomConnection(lockroomBin, ["--log-level", "info", "serve", "--stdio", "--standalone"], {
  env: { ...process.env, LOCKROOM_STATE_DIR: stateDir },
  onStderr: (line) => {
    logFile.write(line + "\n");
    if (/\]\s+warn(ing)?:/i.test(line)) logCounts.warn++;
    else if (/\]\s+(error|critical):/i.test(line)) logCounts.error++;
    else if (line.trim()) logCounts.other++;
  },
});
let lockroomExit = null;
conn.exited.then((e) => {
  lockroomExit = e;
  if (!ending) anomaly("lockroom", `lockroom exited during the soak (code ${e.code}, signal ${e.signal})`);
});

// Requests: timed, optionally cancelled after a delay; never throw. The answer is {ok, result} or
// {ok: false, error}.
const latencies = new Map(); // method -> [ms]
const inflight = new Map(); // id -> {method, t}
async function call(method, params, { cancelAfterMs } = {}) {
  const start = Date.now();
  const { id, reply } = conn.send(method, params);
  const entry = { method, t: start, sandboxId: params?.sandboxId, cancelledAt: null };
  inflight.set(id, entry);
  const cancel =
    cancelAfterMs === undefined
      ? null
      : setTimeout(() => {
          entry.cancelledAt = Date.now();
          conn.cancel(id);
        }, cancelAfterMs);
  const slow = setTimeout(() => {
    const cancelled = entry.cancelledAt ? `, $/cancelRequest sent ${entry.cancelledAt - start} ms after it` : ", not cancelled";
    anomaly("answers", `${method} (id ${id}${entry.sandboxId ? `, ${entry.sandboxId}` : ""}${cancelled}) has no answer after ${kSlowAnswerMs / 1000} s`);
    if (entry.sandboxId) keepConsole(entry.sandboxId, `no answer to ${method} ${id}`);
    log("descriptors", { fds: describeFds(conn.pid) });
  }, kSlowAnswerMs);
  let outcome = "ok";
  try {
    return { ok: true, result: await reply, id };
  } catch (error) {
    outcome = `${error.code} ${error.kind ?? ""}`.trim();
    return { ok: false, error, id };
  } finally {
    if (!method.startsWith("process/")) log("request", { id, method, sandboxId: entry.sandboxId, ms: Date.now() - start, cancelAfterMs: entry.cancelledAt ? entry.cancelledAt - start : undefined, outcome });
    clearTimeout(slow);
    if (cancel) clearTimeout(cancel);
    inflight.delete(id);
    if (!latencies.has(method)) latencies.set(method, []);
    latencies.get(method).push(Date.now() - start);
  }
}

// A sandbox's guest console (its VM state dir names it in sandbox.json), kept for a post-mortem.
function keepConsole(sandboxId, why) {
  try {
    for (const d of fs.readdirSync(path.join(stateDir, "vms"))) {
      const dir = path.join(stateDir, "vms", d);
      const meta = fs.existsSync(path.join(dir, "sandbox.json")) ? fs.readFileSync(path.join(dir, "sandbox.json"), "utf8") : "";
      if (!meta.includes(sandboxId)) continue;
      fs.copyFileSync(path.join(dir, "console.log"), path.join(outDir, `console-${sandboxId}.log`));
      log("console kept", { sandboxId, why, dir: d });
    }
  } catch (e) {
    log("console not kept", { sandboxId, why, error: String(e) });
  }
}

// Background work (operations) is tracked so that the end can wait for it.
const running = new Set();
function spawnTask(name, fn) {
  const p = (async () => {
    try {
      await fn();
    } catch (e) {
      anomaly("soak", `the soak's own ${name} task failed: ${e.stack ?? e}`);
    }
  })();
  running.add(p);
  p.finally(() => running.delete(p));
  return p;
}

// --- processes: exactly one exit, output in order ------------------------------------------------

const procs = new Map(); // processId -> record
const early = new Map(); // processId -> [events] that came before process/start's answer
let outputBytes = 0;
let outputMessages = 0;

function onProcessEvent(kind, params) {
  const rec = procs.get(params.processId);
  if (!rec) {
    if (!early.has(params.processId)) early.set(params.processId, []);
    early.get(params.processId).push({ kind, params });
    return;
  }
  if (kind === "output") onOutput(rec, params);
  else onExited(rec, params);
}
conn.on("process/output", (p) => {
  outputMessages++;
  onProcessEvent("output", p);
});
conn.on("process/exited", (p) => onProcessEvent("exited", p));
conn.on("process/started", (p) => anomaly("events", `process/started for ${p.processId}, but no kit service was asked for`));

function registerProcess(processId, sb, kind) {
  const rec = { id: processId, sandboxId: sb.id, kind, startedAt: elapsed(), exits: 0, exit: null, signal: null, signalAt: 0, next: 0, partial: "", waiters: [] };
  procs.set(processId, rec);
  if (kind === "stream") sb.streams.add(rec);
  for (const e of early.get(processId) ?? []) (e.kind === "output" ? onOutput : onExited)(rec, e.params);
  early.delete(processId);
  return rec;
}

function onOutput(rec, params) {
  const data = params.encoding === "base64" ? Buffer.from(params.data, "base64").toString("latin1") : params.data;
  outputBytes += data.length;
  if (params.sandboxId !== rec.sandboxId) anomaly("events", `output of ${rec.id} names sandbox ${params.sandboxId}, not ${rec.sandboxId}`);
  if (rec.exits > 0) anomaly("events", `output of ${rec.id} after its process/exited`);
  if (rec.kind !== "stream") return;
  // A streamer prints "line 0", "line 1", ...: nothing lost, repeated or reordered.
  const lines = (rec.partial + data).split("\n");
  rec.partial = lines.pop();
  for (const line of lines) {
    if (line !== `line ${rec.next}`) {
      if (!rec.badOrder) anomaly("output", `${rec.id}: expected "line ${rec.next}", got ${JSON.stringify(line.slice(0, 60))}`);
      rec.badOrder = true;
      const m = /^line (\d+)$/.exec(line);
      if (m) rec.next = Number(m[1]);
    }
    rec.next++;
  }
}

const signalLatency = [];
function onExited(rec, params) {
  rec.exits++;
  if (rec.exits > 1) {
    anomaly("exactly-once", `${rec.id} got process/exited ${rec.exits} times (${JSON.stringify(params)})`);
    return;
  }
  rec.exit = params;
  rec.exitedAt = elapsed();
  const sb = sandboxes.get(rec.sandboxId);
  if (rec.kind === "stream") sb?.streams.delete(rec);
  if (params.sandboxId !== rec.sandboxId) anomaly("events", `process/exited of ${rec.id} names sandbox ${params.sandboxId}, not ${rec.sandboxId}`);
  if (rec.signal) {
    // The exit says the signal this soak sent, by its name and number.
    const expected = { SIGTERM: 15, SIGINT: 2, SIGKILL: 9 }[rec.signal];
    if (params.signal === rec.signal && params.signalNumber === expected) {
      tally("process/exited after process/signal", `${rec.signal}`);
      signalLatency.push(rec.exitedAt - rec.signalAt);
    } else if (params.reason === "sandboxGone") {
      tally("process/exited after process/signal", "sandbox went first");
    } else {
      tally("process/exited after process/signal", "other exit");
      anomaly("signals", `${rec.id} was sent ${rec.signal} but exited with ${JSON.stringify(params)}`);
    }
  } else if (rec.kind === "stream" && params.reason !== "sandboxGone") {
    anomaly("signals", `streamer ${rec.id} ended on its own: ${JSON.stringify(params)}`);
  }
  tally("process/exited", params.reason ?? (params.signal ? "signal" : "exitCode"));
  for (const w of rec.waiters) w(params);
  rec.waiters = [];
  // A streamer that was signalled is replaced, while its sandbox lives and the soak goes on.
  if (rec.kind === "stream" && sb && sb.state === "ready" && !ending && params.reason !== "sandboxGone") {
    spawnTask("replacement", () => startStreamer(sb, "replacement"));
  }
}

function waitExit(rec, ms) {
  if (rec.exits > 0) return Promise.resolve(rec.exit);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), ms);
    rec.waiters.push((e) => {
      clearTimeout(timer);
      resolve(e);
    });
  });
}

async function startStreamer(sb, why) {
  const r = await call("process/start", { sandboxId: sb.id, argv: ["sh", "-c", kStream], cwd: "/tmp" });
  if (r.ok) {
    registerProcess(r.result.processId, sb, "stream");
    tally("process/start", why);
  } else raced("process/start", sb, r.error);
}

// An error is a race (not a finding) when the sandbox was being destroyed or had gone.
function raced(kind, sb, error) {
  if (sb.state !== "ready" && error.code === -32803 && ["wrongState", "notFound", "unavailable"].includes(error.kind)) {
    tally(kind, `sandbox gone (${error.kind})`);
    return true;
  }
  tally(kind, `error ${error.code} ${error.kind ?? ""}`.trim());
  anomaly("answers", `${kind} on ${sb.id} (${sb.state}): ${errText(error)}`);
  return false;
}

// --- sandboxes ----------------------------------------------------------------------------------

const sandboxes = new Map(); // sandboxId -> {id, state, repo, ws, streams}
const givenIds = new Set();
const unknownNotes = []; // notifications naming a sandbox the soak was not given (yet)
let creating = 0;
const accels = new Set(); // what the creates answered: "kvm" or "tcg"
let serial = 0;
let ending = false;

conn.on("sandbox/stateChanged", (p) => {
  const sb = sandboxes.get(p.sandboxId);
  if (!sb) {
    unknownNotes.push({ t: elapsed(), method: "sandbox/stateChanged", id: p.sandboxId, params: p });
    return;
  }
  sb.states.push(p.state);
  if (p.state === "failed" || ((p.state === "gone" || p.state === "stopping") && p.reason !== "destroyed")) {
    anomaly("sandboxes", `${sb.id} ${p.state}: ${p.reason} (${p.message ?? ""})`);
  }
  if (p.state === "gone" || p.state === "failed") {
    if (sb.state === "ready") releaseSandbox(sb, "ended");
  }
});
conn.on("changes/changed", (p) => {
  const sb = sandboxes.get(p.sandboxId);
  if (!sb) return unknownNotes.push({ t: elapsed(), method: "changes/changed", id: p.sandboxId, params: p });
  if (!sb.repo) anomaly("events", `changes/changed for ${sb.id}, which has no workspace`);
  if (p.version <= sb.changedVersion) anomaly("events", `changes/changed for ${sb.id}: version ${p.version} after ${sb.changedVersion}`);
  sb.changedVersion = p.version;
  tally("changes/changed (received)", "ok");
});
for (const m of ["sandbox/limitReached", "sandbox/misbehaved"]) {
  conn.on(m, (p) => anomaly("events", `${m}: ${JSON.stringify(p).slice(0, 300)}`));
}
const logMessages = [];
conn.on("window/logMessage", (p) => {
  tally("window/logMessage (received)", `type ${p.type}`);
  if (logMessages.length < 20) logMessages.push(p);
});

function releaseSandbox(sb, how) {
  sb.state = how === "destroyed" ? "gone" : "ended";
  if (sb.repo) {
    sb.repo.inUse = false;
    sb.repo = null;
  }
}

// Creates one sandbox (maybe with a workspace); cancelAfterMs sends $/cancelRequest for it.
async function createSandbox({ cancelAfterMs } = {}) {
  const withWorkspace = chance(workspaceShare);
  const repo = withWorkspace ? takeRepo() : null;
  const label = `soak ${++serial}`;
  const params = { resources: { memoryMiB }, label };
  if (repo) params.workspace = repo.dir;
  const kind = cancelAfterMs === undefined ? "sandbox/create" : "sandbox/create + $/cancelRequest";
  const snapshot = repo ? new Map(repo.host) : null; // the host as lockroom will snapshot it
  const r = await call("sandbox/create", params, { cancelAfterMs });
  if (!r.ok) {
    if (repo) repo.inUse = false;
    if (r.error.code === -32800 && cancelAfterMs !== undefined) tally(kind, repo ? "cancelled (workspace)" : "cancelled");
    else {
      tally(kind, `error ${r.error.code} ${r.error.kind ?? ""}`.trim());
      anomaly("answers", `sandbox/create: ${errText(r.error)}`);
    }
    return null;
  }
  const id = r.result.sandboxId;
  accels.add(r.result.accel);
  tally(kind, cancelAfterMs === undefined ? (repo ? "ok (workspace)" : "ok") : "answered before the cancel");
  if (givenIds.has(id)) anomaly("sandboxes", `sandbox/create gave out ${id} twice`);
  givenIds.add(id);
  const sb = { id, label, state: "ready", repo, ws: null, streams: new Set(), states: [], changedVersion: 0, createdAt: elapsed() };
  if (repo) sb.ws = { snap: snapshot, base: new Map(snapshot), guest: new Map(snapshot), cycle: 0 };
  sandboxes.set(id, sb);
  log("created", { id, workspace: repo?.name, ms: r.result.timings?.totalMs, templateSource: r.result.templateSource });
  for (let i = 0; i < kStreamers; i++) spawnTask("streamer", () => startStreamer(sb, "streamer"));
  if (repo) spawnTask("review loop", () => reviewLoop(sb));
  return sb;
}

async function destroySandbox(sb, why) {
  sb.state = "destroying";
  const r = await call("sandbox/destroy", { sandboxId: sb.id });
  if (!r.ok) {
    if (sb.states.includes("gone") || sb.states.includes("failed")) tally("sandbox/destroy", `already ended (${r.error.kind})`);
    else {
      tally("sandbox/destroy", `error ${r.error.code} ${r.error.kind ?? ""}`.trim());
      anomaly("answers", `sandbox/destroy ${sb.id}: ${errText(r.error)}`);
    }
  } else {
    tally("sandbox/destroy", why);
    if (r.result !== null) anomaly("answers", `sandbox/destroy ${sb.id} answered ${JSON.stringify(r.result)}, not null`);
    // "the answer comes when all of that is done": every process has its exit by now.
    const open = [...procs.values()].filter((p) => p.sandboxId === sb.id && p.exits === 0);
    if (open.length) anomaly("exactly-once", `sandbox/destroy ${sb.id} answered while ${open.map((p) => p.id).join(", ")} had no process/exited yet`);
    if (!sb.states.includes("gone")) anomaly("sandboxes", `sandbox/destroy ${sb.id} answered before stateChanged gone (states: ${sb.states.join(", ")})`);
  }
  releaseSandbox(sb, "destroyed");
}

const live = () => [...sandboxes.values()].filter((s) => s.state === "ready");

// --- workspaces: host repositories and the model of their files -----------------------------------

const repos = [];
function git(dir, ...args) {
  execFileSync("git", args, { cwd: dir, stdio: "ignore" });
}
function makeRepo(k) {
  const name = `r${String(k).padStart(2, "0")}`;
  const dir = path.join(repoDir, name);
  fs.mkdirSync(dir);
  const host = new Map();
  for (let i = 0; i < 12; i++) {
    const p = `f${String(i).padStart(2, "0")}.txt`;
    const content = Array.from({ length: 4 }, (_, j) => `${name} ${p} original line ${j}\n`).join("");
    fs.writeFileSync(path.join(dir, p), content);
    host.set(p, content);
  }
  git(dir, "init", "-q", "-b", "main");
  git(dir, "add", "-A");
  git(dir, "-c", "user.name=soak", "-c", "user.email=soak@example.invalid", "commit", "-q", "-m", "start");
  // host: what the host folder must hold (path -> content), from the applies' answers.
  return { name, dir, host, inUse: false, newFiles: 0, mismatches: 0 };
}
function takeRepo() {
  let repo = repos.find((r) => !r.inUse);
  if (!repo) {
    repo = makeRepo(repos.length);
    repos.push(repo);
  }
  repo.inUse = true;
  return repo;
}

function readTree(dir, rel = "", out = new Map()) {
  for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const p = rel ? `${rel}/${e.name}` : e.name;
    if (!rel && e.name === ".git") continue;
    if (e.isDirectory()) readTree(dir, p, out);
    else out.set(p, fs.readFileSync(path.join(dir, p), "utf8"));
  }
  return out;
}

// The host folder against what the applies said; returns the differences.
function compareHost(repo) {
  const disk = readTree(repo.dir);
  const diffs = [];
  for (const [p, c] of repo.host) {
    if (!disk.has(p)) diffs.push(`${p}: missing on the host`);
    else if (disk.get(p) !== c) diffs.push(`${p}: content differs`);
  }
  for (const p of disk.keys()) if (!repo.host.has(p)) diffs.push(`${p}: on the host, but no apply wrote it`);
  return { diffs, disk };
}
function checkHost(repo, when) {
  const { diffs, disk } = compareHost(repo);
  if (diffs.length) {
    repo.mismatches += diffs.length;
    anomaly("workspace", `${repo.name} after ${when}: ${diffs.slice(0, 5).join("; ")}`);
    repo.host = disk; // report once, then go on from what is there
  }
}

// What a review must show: every path whose guest content differs from its base.
function expectedChanges(ws) {
  const out = new Map();
  for (const p of new Set([...ws.base.keys(), ...ws.guest.keys()])) {
    const b = ws.base.get(p);
    const g = ws.guest.get(p);
    if (b === g) continue;
    out.set(p, b === undefined ? "added" : g === undefined ? "deleted" : "modified");
  }
  return out;
}

const shQuote = (s) => `'${s.replace(/'/g, `'\\''`)}'`;

// One edit: 1-4 files modified, appended to, added or deleted; returns the shell script and
// applies it to the model.
function makeEdit(sb) {
  const ws = sb.ws;
  const repo = sb.repo;
  const c = ++ws.cycle;
  const cmds = [];
  const touched = new Set();
  for (let j = 0, n = 1 + Math.floor(random() * 4); j < n; j++) {
    const existing = [...ws.guest.keys()].filter((p) => !touched.has(p));
    const what = existing.length < 4 ? "add" : pick(["modify", "modify", "append", "add", "delete"]);
    const lines = Array.from({ length: 1 + Math.floor(random() * 4) }, (_, k) => `${sb.id} cycle ${c} edit ${j} line ${k}`);
    if (what === "add") {
      const p = `n${String(++repo.newFiles).padStart(3, "0")}.txt`;
      cmds.push(`printf '%s\\n' ${lines.map(shQuote).join(" ")} > ${p}`);
      ws.guest.set(p, lines.map((l) => l + "\n").join(""));
      touched.add(p);
    } else {
      const p = pick(existing);
      touched.add(p);
      if (what === "delete") {
        cmds.push(`rm ${p}`);
        ws.guest.delete(p);
      } else if (what === "append") {
        cmds.push(`printf '%s\\n' ${lines.map(shQuote).join(" ")} >> ${p}`);
        ws.guest.set(p, ws.guest.get(p) + lines.map((l) => l + "\n").join(""));
      } else {
        cmds.push(`printf '%s\\n' ${lines.map(shQuote).join(" ")} > ${p}`);
        ws.guest.set(p, lines.map((l) => l + "\n").join(""));
      }
    }
  }
  return `set -e; cd /workspace; ${cmds.join("; ")}`;
}

// The new side of a file rebuilt from its base and the diff's hunks.
function applyHunks(oldText, hunks) {
  const old = oldText.match(/[^\n]*\n|[^\n]+$/g) ?? [];
  const out = [];
  let i = 0;
  for (const h of hunks) {
    const start = h.oldLines === 0 ? h.oldStart : h.oldStart - 1;
    while (i < start) out.push(old[i++]);
    for (const l of h.lines) {
      if (l.origin === "+") out.push(l.text);
      else if (l.origin === " " || l.origin === "-") {
        if (old[i] !== l.text) return null;
        if (l.origin === " ") out.push(old[i]);
        i++;
      }
    }
  }
  while (i < old.length) out.push(old[i++]);
  return out.join("");
}

let reviewCycles = 0;
const conflicts = []; // apply answers of "conflict" where the host had indeed changed since the base
async function reviewLoop(sb) {
  await sleep(between(...kReviewPauseMs));
  while (sb.state === "ready" && !ending) {
    const gone = await reviewCycle(sb);
    if (gone) break;
    await sleep(between(...kReviewPauseMs));
  }
}

// One edit → list → diff → apply (some) → [stale re-apply] → discard (the rest). Returns true
// when the sandbox went away under it.
async function reviewCycle(sb) {
  const ws = sb.ws;
  const repo = sb.repo;
  if (!repo) return true;
  // 1. A guest process edits the workspace.
  const script = makeEdit(sb);
  const r = await call("process/start", { sandboxId: sb.id, argv: ["sh", "-c", script] });
  if (!r.ok) return raced("process/start", sb, r.error) || true;
  tally("process/start", "edit");
  const rec = registerProcess(r.result.processId, sb, "edit");
  const exit = await waitExit(rec, 60_000);
  if (!exit) {
    anomaly("answers", `edit process ${rec.id} on ${sb.id} did not exit within 60 s`);
    return true;
  }
  if (exit.reason === "sandboxGone") return true;
  if (exit.exitCode !== 0) anomaly("workspace", `edit process ${rec.id} on ${sb.id} exited ${JSON.stringify(exit)}`);

  // 2. changes/list: the paths and statuses of the model.
  const list = await call("changes/list", { sandboxId: sb.id });
  if (!list.ok) return raced("changes/list", sb, list.error) || true;
  tally("changes/list", "ok");
  const expected = expectedChanges(ws);
  const listed = new Map();
  for (const f of list.result.files) {
    if (f.status === "renamed") {
      listed.set(f.oldPath, "deleted");
      listed.set(f.path, "added");
    } else listed.set(f.path, f.status);
  }
  const wrong = [...new Set([...expected.keys(), ...listed.keys()])].filter((p) => expected.get(p) !== listed.get(p));
  if (wrong.length) {
    anomaly("review", `${sb.id} changes/list: ${wrong.slice(0, 5).map((p) => `${p} listed ${listed.get(p) ?? "-"}, expected ${expected.get(p) ?? "-"}`).join("; ")}`);
    return true; // the model no longer knows this guest: stop reviewing it
  }
  if (list.result.refused?.length) anomaly("review", `${sb.id} changes/list refused ${JSON.stringify(list.result.refused).slice(0, 200)}`);
  const viewId = list.result.viewId;

  // 3. changes/diff of that view: each file's hunks rebuild the guest's content from its base.
  const diff = await call("changes/diff", { sandboxId: sb.id, viewId });
  if (!diff.ok) return raced("changes/diff", sb, diff.error) || true;
  tally("changes/diff", "ok");
  if (diff.result.viewId !== viewId) anomaly("review", `${sb.id} changes/diff of view ${viewId} answered view ${diff.result.viewId}`);
  for (const f of diff.result.files) {
    if (f.status === "renamed") continue;
    const rebuilt = applyHunks(ws.base.get(f.path) ?? "", f.hunks ?? []);
    if (rebuilt !== (ws.guest.get(f.path) ?? "")) anomaly("review", `${sb.id} changes/diff: the hunks of ${f.path} do not rebuild the guest's file`);
  }
  const paths = [...listed.keys()];
  if (!paths.length) return false;

  // 4. changes/apply naming the view, for some files; sometimes cancelled.
  const chosen = paths.filter(() => chance(0.6));
  const rest = paths.filter((p) => !chosen.includes(p));
  const atView = new Map(paths.map((p) => [p, ws.guest.get(p)]));
  if (chosen.length) {
    const cancelled = chance(0.2);
    const kind = cancelled ? "changes/apply + $/cancelRequest" : "changes/apply";
    const ap = await call("changes/apply", { sandboxId: sb.id, viewId, select: chosen.map((p) => ({ path: p })) }, cancelled ? { cancelAfterMs: Math.floor(between(0, 40)) } : {});
    if (!ap.ok && ap.error.code === -32800) tally(kind, "cancelled: nothing written");
    else if (!ap.ok) return raced(kind, sb, ap.error) || true;
    else {
      tally(kind, cancelled ? "answered: written" : "ok");
      const answered = new Map(); // path -> status
      for (const f of ap.result.files) {
        answered.set(f.path, f.status);
        tally("changes/apply (files)", f.status);
        // A three-way merge: base = the review's base, ours = the host now, theirs = the view.
        // The host differs from the base when an earlier apply wrote it and a discard put the
        // base back to the snapshot (what was applied stays on the host).
        const c = atView.get(f.path);
        const b = ws.base.get(f.path);
        const h = repo.host.get(f.path);
        const setOrDelete = (m, v) => (v === undefined ? m.delete(f.path) : m.set(f.path, v));
        if (f.status === "applied" || f.status === "unchanged") {
          if (h !== b && h !== c) anomaly("workspace", `${sb.id} changes/apply ${f.path}: ${f.status}, though the host changed it since the base (the host's edit is lost)`);
          if (f.status === "unchanged" && h !== c) anomaly("workspace", `${sb.id} changes/apply ${f.path}: unchanged, but the host does not hold the sandbox's version`);
          setOrDelete(repo.host, c);
          setOrDelete(ws.base, c);
        } else if (f.status === "conflict") {
          if (h === b) anomaly("workspace", `${sb.id} changes/apply ${f.path}: a conflict, though the host did not change it since the base (${f.conflict ?? ""})`);
          else conflicts.push({ path: f.path, why: f.conflict ?? f.reason });
        } else if (f.status === "merged") {
          if (h === b) anomaly("workspace", `${sb.id} changes/apply ${f.path}: merged, though the host did not change it since the base`);
          // The merge's text is lockroom's: take what the host holds now as the expected content.
          const p = path.join(repo.dir, f.path);
          setOrDelete(repo.host, fs.existsSync(p) ? fs.readFileSync(p, "utf8") : undefined);
          setOrDelete(ws.base, c);
        } else anomaly("workspace", `${sb.id} changes/apply ${f.path}: ${f.status} ${f.reason ?? ""}`);
      }
      for (const p of chosen) if (!answered.has(p)) anomaly("workspace", `${sb.id} changes/apply did not answer for ${p}`);
      // Sometimes the same (now stale) view again: every file it wrote (whose base moved) must be
      // refused; a file that was a conflict (base not moved) may be a conflict again.
      if (chance(0.15)) {
        const again = await call("changes/apply", { sandboxId: sb.id, viewId, select: chosen.map((p) => ({ path: p })) });
        if (!again.ok) {
          if (again.error.kind === "wrongState") tally("changes/apply of a stale view", "view no longer kept");
          else if (!raced("changes/apply of a stale view", sb, again.error)) return true;
        } else {
          for (const f of again.result.files) {
            const first = answered.get(f.path);
            tally("changes/apply of a stale view", first === "conflict" ? `${f.status} (a conflict the first time)` : f.status);
            if (f.status !== "refused" && !(first === "conflict" && f.status === "conflict"))
              anomaly("workspace", `${sb.id} a second apply of view ${viewId} gave ${f.path} ${f.status} (the first: ${first})`);
          }
        }
      }
    }
    checkHost(repo, `changes/apply on ${sb.id}`);
  }

  // 5. changes/discard of the rest (sometimes of everything); sometimes cancelled.
  if (rest.length || chance(0.1)) {
    const everything = chance(0.2);
    const cancelled = chance(0.15);
    const kind = cancelled ? "changes/discard + $/cancelRequest" : "changes/discard";
    const params = everything ? { sandboxId: sb.id } : { sandboxId: sb.id, paths: rest };
    if (!everything && !rest.length) return false;
    const d = await call("changes/discard", params, cancelled ? { cancelAfterMs: Math.floor(between(0, 40)) } : {});
    if (!d.ok && d.error.code === -32800) tally(kind, "cancelled: nothing changed");
    else if (!d.ok) return raced(kind, sb, d.error) || true;
    else {
      tally(kind, everything ? "everything" : "paths");
      const undo = everything ? new Set([...ws.guest.keys(), ...ws.base.keys(), ...ws.snap.keys()]) : new Set(rest);
      for (const p of undo) {
        for (const m of [ws.guest, ws.base]) {
          if (ws.snap.has(p)) m.set(p, ws.snap.get(p));
          else m.delete(p);
        }
      }
      if (!everything && d.result.discarded !== rest.length) anomaly("review", `${sb.id} changes/discard of ${rest.length} paths answered discarded ${d.result.discarded}`);
    }
  }
  reviewCycles++;
  return false;
}

// --- the random operations ------------------------------------------------------------------------

async function opSignal() {
  const candidates = live().flatMap((sb) => [...sb.streams].filter((p) => p.exits === 0 && !p.signal).map((p) => [sb, p]));
  if (!candidates.length) return;
  const [sb, rec] = pick(candidates);
  const name = pick(["SIGTERM", "SIGINT", "SIGKILL"]);
  const spelled = pick([name, name.slice(3), { SIGTERM: 15, SIGINT: 2, SIGKILL: 9 }[name]]);
  rec.signal = name;
  rec.signalAt = elapsed();
  const r = await call("process/signal", { processId: rec.id, signal: spelled });
  if (r.ok) {
    tally("process/signal", name);
    if (r.result !== null) anomaly("answers", `process/signal answered ${JSON.stringify(r.result)}`);
  } else if ((rec.exits > 0 || sb.state !== "ready") && r.error.code === -32803 && ["notFound", "wrongState"].includes(r.error.kind)) tally("process/signal", `raced an exit (${r.error.kind})`);
  else {
    tally("process/signal", `error ${r.error.code} ${r.error.kind ?? ""}`.trim());
    anomaly("answers", `process/signal ${rec.id} ${JSON.stringify(spelled)}: ${errText(r.error)}`);
  }
}

async function opCancel() {
  const withWs = live().filter((s) => s.repo);
  const what = withWs.length ? pick(["sandbox/create", "changes/list", "changes/diff"]) : "sandbox/create";
  if (what === "sandbox/create") {
    creating++;
    try {
      await createSandbox({ cancelAfterMs: Math.floor(between(0, 1500)) });
    } finally {
      creating--;
    }
    return;
  }
  const sb = pick(withWs);
  const r = await call(what, { sandboxId: sb.id }, { cancelAfterMs: Math.floor(between(0, 300)) });
  const kind = `${what} + $/cancelRequest`;
  if (r.ok) tally(kind, "answered before the cancel");
  else if (r.error.code === -32800) tally(kind, "cancelled");
  else raced(kind, sb, r.error);
}

async function opDestroy() {
  const candidates = live();
  if (candidates.length < 2) return;
  await destroySandbox(pick(candidates), "random");
}

// sandbox/list names exactly the sandboxes this connection was given and still has.
async function opAudit() {
  const r = await call("sandbox/list", {});
  if (!r.ok) return anomaly("answers", `sandbox/list: ${errText(r.error)}`);
  tally("sandbox/list", "ok");
  const listed = new Set(r.result.sandboxes.map((s) => s.sandboxId));
  for (const id of listed) if (!givenIds.has(id)) anomaly("sandboxes", `sandbox/list shows ${id}, which no create answered`);
  for (const sb of live()) if (!listed.has(sb.id) && sb.state === "ready") anomaly("sandboxes", `sandbox/list leaves out ${sb.id}, which is live`);
  for (const s of r.result.sandboxes) {
    const sb = sandboxes.get(s.sandboxId);
    if (sb && sb.state === "gone") anomaly("sandboxes", `sandbox/list still shows ${s.sandboxId} after its destroy answered`);
  }
}

function every(meanMs, fn, name) {
  const loop = async () => {
    while (!ending) {
      await sleep(expDelay(meanMs));
      if (ending) break;
      spawnTask(name, fn);
    }
  };
  return loop();
}

// --- sampling --------------------------------------------------------------------------------------

const samples = [];
const clockTicks = 100;
function qemuProcesses() {
  const out = [];
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${d}/cmdline`, "utf8");
      if (!cmd.startsWith("qemu-system")) continue;
      const stat = fs.readFileSync(`/proc/${d}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      out.push({ pid: Number(d), ppid, ours: cmd.includes(stateDir) });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}
// What a process's descriptors point at, counted by kind ("socket" x3, "pipe" x2, files by path).
function fdTargets(pid) {
  const out = new Map();
  try {
    for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
      let target;
      try {
        target = fs.readlinkSync(`/proc/${pid}/fd/${fd}`).replace(/:\[\d+\]$/, "");
      } catch {
        continue;
      }
      out.set(target, (out.get(target) ?? 0) + 1);
    }
  } catch {
    // gone
  }
  return out;
}
function describeFds(pid) {
  return [...fdTargets(pid)].map(([t, n]) => (n > 1 ? `${t} ×${n}` : t)).join(", ");
}
function sample(tag = "") {
  const pid = conn.pid;
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
    const field = (k) => Number(new RegExp(`^${k}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? NaN);
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8").slice(fs.readFileSync(`/proc/${pid}/stat`, "utf8").lastIndexOf(")") + 2).split(" ");
    const s = {
      t: elapsed() / 1000,
      rssKiB: field("VmRSS"),
      hwmKiB: field("VmHWM"),
      fds: fs.readdirSync(`/proc/${pid}/fd`).length,
      threads: field("Threads"),
      cpuS: (Number(stat[11]) + Number(stat[12])) / clockTicks,
      qemu: qemuProcesses().filter((q) => q.ppid === pid).length,
      sandboxes: live().length,
      processes: [...procs.values()].filter((p) => p.exits === 0).length,
      inflight: inflight.size,
      outputKiB: Math.round(outputBytes / 1024),
      load1: os.loadavg()[0],
      tag,
    };
    samples.push(s);
    return s;
  } catch {
    return null; // lockroom has exited
  }
}

// --- the run ------------------------------------------------------------------------------------

process.stderr.write(`soak: ${minutes} min, ${target} sandboxes of ${memoryMiB} MiB, seed ${seed}, out ${outDir}\n`);
const init = await call("initialize", { processId: process.pid, clientInfo: { name: "lockroom-soak", version: "1" }, capabilities: {} });
if (!init.ok) {
  console.error(`initialize failed: ${errText(init.error)}`);
  process.exit(1);
}
conn.notify("initialized", {});
await sleep(500);
const idleBefore = sample("idle before");
const fdsBefore = fdTargets(conn.pid);
const sampler = setInterval(() => sample(), 1000);

let firstFullAt = null;
const populate = (async () => {
  while (!ending) {
    if (live().length + creating < target && creating < kMaxCreatesInFlight) {
      creating++;
      spawnTask("create", async () => {
        try {
          await createSandbox();
        } finally {
          creating--;
        }
      });
    }
    if (firstFullAt === null && live().length >= target) {
      firstFullAt = elapsed();
      process.stderr.write(`soak: ${target} sandboxes live after ${(firstFullAt / 1000).toFixed(1)} s\n`);
    }
    await sleep(200);
  }
})();
const loops = [
  every(kMeanSignalMs, opSignal, "signal"),
  every(kMeanCancelMs, opCancel, "cancel"),
  every(kMeanDestroyMs, opDestroy, "destroy"),
  every(kAuditEveryMs, opAudit, "audit"),
];
const progress = setInterval(() => {
  log("descriptors", { fds: describeFds(conn.pid) });
  const s = samples.at(-1);
  if (s) process.stderr.write(`[${s.t.toFixed(0)} s] sandboxes ${s.sandboxes}, processes ${s.processes}, rss ${(s.rssKiB / 1024).toFixed(1)} MiB, fds ${s.fds}, qemu ${s.qemu}, load ${s.load1.toFixed(1)}, anomalies ${anomalies.length}\n`);
}, 30_000);

await sleep(durationMs);
const soakEndedAt = elapsed();
ending = true;
clearInterval(progress);
process.stderr.write("soak: time is up; waiting for the operations under way\n");
await populate;
await Promise.all(loops);
const drainDeadline = Date.now() + 180_000;
while (running.size && Date.now() < drainDeadline) await Promise.race([...running, sleep(1000)]);
if (running.size) {
  log("descriptors", { fds: describeFds(conn.pid) });
  for (const e of inflight.values()) if (e.sandboxId) keepConsole(e.sandboxId, `no answer to ${e.method} at the end`);
  const waiting = [...inflight].map(([id, e]) => `${e.method} (id ${id}${e.sandboxId ? `, ${e.sandboxId}` : ""}, ${((Date.now() - e.t) / 1000).toFixed(0)} s${e.cancelledAt ? ", cancelled" : ""})`);
  anomaly("answers", `${running.size} operations still under way 180 s after the end; requests without an answer: ${waiting.join(", ")}`);
}

process.stderr.write(`soak: destroying the ${live().length} live sandboxes\n`);
await Promise.all(live().map((sb) => destroySandbox(sb, "end of the soak")));
await sleep(2000);
await opAudit();
const listAtEnd = await call("sandbox/list", {});
if (listAtEnd.ok && listAtEnd.result.sandboxes.length) anomaly("sandboxes", `sandbox/list at the end shows ${listAtEnd.result.sandboxes.length} sandboxes`);
await sleep(3000);
const idleAfter = sample("idle after");
const fdsAfter = fdTargets(conn.pid);
const isStoreLock = (t) => t.endsWith("/store.git/lockroom-in-use");
const gained = [...fdsAfter].filter(([t, n]) => n > (fdsBefore.get(t) ?? 0));
// lockroom keeps each workspace store it used open (its in-use lock), one per host folder, for
// the life of the process: counted apart from the descriptors that should have gone.
const storeLocksKept = gained.filter(([t]) => isStoreLock(t)).length;
const fdsGained = gained.filter(([t]) => !isStoreLock(t)).map(([t, n]) => `${path.basename(t)} +${n - (fdsBefore.get(t) ?? 0)}`);
clearInterval(sampler);

const shut = await call("shutdown", null);
if (!shut.ok) anomaly("answers", `shutdown: ${errText(shut.error)}`);
conn.notify("exit", null);
const exitTimeout = sleep(60_000).then(() => null);
let exit = await Promise.race([conn.exited, exitTimeout]);
if (!exit) {
  anomaly("lockroom", `lockroom did not exit within 60 s of shutdown + exit (descriptors then: ${describeFds(conn.pid)}); sending SIGTERM`);
  conn.child.kill("SIGTERM");
  exit = await Promise.race([conn.exited, sleep(30_000).then(() => null)]);
  if (!exit) {
    anomaly("lockroom", "lockroom did not exit within 30 s of SIGTERM either; killed (SIGKILL)");
    conn.child.kill("SIGKILL");
    exit = await conn.exited;
  }
}
if (exit.code !== 0) anomaly("lockroom", `lockroom exited with code ${exit.code}, signal ${exit.signal}`);

// --- the checks -----------------------------------------------------------------------------------

// Exactly one process/exited per started process; no event for a process never started.
let exitedOnce = 0;
const notOnce = [];
for (const p of procs.values()) {
  if (p.exits === 1) exitedOnce++;
  else notOnce.push(`${p.id} (${p.kind}, ${p.sandboxId}): ${p.exits} exits`);
}
if (notOnce.length) anomaly("exactly-once", `${notOnce.length} processes without exactly one process/exited: ${notOnce.slice(0, 10).join("; ")}`);
for (const [id, evs] of early) anomaly("events", `${evs.length} events for ${id}, which no process/start answered: ${evs.map((e) => `${e.kind} ${JSON.stringify(e.params).slice(0, 160)}`).join("; ")}`);
// Notifications about sandboxes no create answered (a cancelled create must never show its id).
const strays = unknownNotes.filter((n) => !givenIds.has(n.id));
for (const n of strays.slice(0, 10)) anomaly("sandboxes", `${n.method} for ${n.id}, which no create answered: ${JSON.stringify(n.params).slice(0, 200)}`);

// No QEMU left that names the soak's state dir; no VM state left.
await sleep(2000);
const orphans = qemuProcesses().filter((q) => q.ours);
if (orphans.length) anomaly("orphans", `${orphans.length} QEMU processes still name the state dir: pids ${orphans.map((q) => q.pid).join(", ")}`);
const vmsDir = path.join(stateDir, "vms");
const vmLeft = fs.existsSync(vmsDir) ? fs.readdirSync(vmsDir) : [];
if (vmLeft.length) anomaly("orphans", `${vmLeft.length} VM state dirs left in state/vms: ${vmLeft.slice(0, 5).join(", ")}`);

// The host repositories against the applies' answers.
let hostFiles = 0;
let hostDiffs = 0;
for (const repo of repos) {
  const { diffs } = compareHost(repo);
  hostFiles += repo.host.size;
  hostDiffs += diffs.length;
  if (diffs.length) anomaly("workspace", `${repo.name} at the end: ${diffs.slice(0, 5).join("; ")}`);
}
const midRunDiffs = repos.reduce((n, r) => n + r.mismatches, 0);

// Growth: medians of the first and last minute after warm-up.
const body = samples.filter((s) => !s.tag && s.t * 1000 >= warmupMs && s.t * 1000 <= soakEndedAt);
const windowS = Math.min(60, (soakEndedAt - warmupMs) / 2000);
const firstWin = body.filter((s) => s.t < warmupMs / 1000 + windowS);
const lastWin = body.filter((s) => s.t >= soakEndedAt / 1000 - windowS);
const all = samples.filter((s) => !s.tag);
const mib = (kib) => kib / 1024;
const growth = {
  windowS,
  warmupS: warmupMs / 1000,
  rssFirstMiB: mib(median(firstWin.map((s) => s.rssKiB))),
  rssLastMiB: mib(median(lastWin.map((s) => s.rssKiB))),
  fdsFirst: median(firstWin.map((s) => s.fds)),
  fdsLast: median(lastWin.map((s) => s.fds)),
  sandboxesFirst: median(firstWin.map((s) => s.sandboxes)),
  sandboxesLast: median(lastWin.map((s) => s.sandboxes)),
  threadsFirst: median(firstWin.map((s) => s.threads)),
  threadsLast: median(lastWin.map((s) => s.threads)),
};
// Growth means more than 10 % (and 8 MiB) of RSS, or more than 16 descriptors, in the last window.
growth.rssGrew = growth.rssLastMiB > growth.rssFirstMiB * 1.1 && growth.rssLastMiB - growth.rssFirstMiB > 8;
growth.fdsGrew = growth.fdsLast - growth.fdsFirst > 16;
if (growth.rssGrew) anomaly("growth", `RSS median grew from ${growth.rssFirstMiB.toFixed(1)} to ${growth.rssLastMiB.toFixed(1)} MiB`);
if (growth.fdsGrew) anomaly("growth", `descriptor median grew from ${growth.fdsFirst} to ${growth.fdsLast}`);
if (idleBefore && idleAfter && idleAfter.fds - storeLocksKept > idleBefore.fds + 2) anomaly("growth", `with no sandbox, ${idleBefore.fds} descriptors before the soak, ${idleAfter.fds} after (${storeLocksKept} of them workspace store locks); gained: ${fdsGained.join(", ")}`);

// --- the report -----------------------------------------------------------------------------------

const extremes = (key) => {
  const xs = all.map((s) => s[key]);
  return { start: all[0]?.[key], end: all.at(-1)?.[key], peak: Math.max(...xs) };
};
const rss = extremes("rssKiB");
const fds = extremes("fds");
const qemu = extremes("qemu");
const load = all.map((s) => s.load1);
const started = procs.size;
const byKind = (k) => [...procs.values()].filter((p) => p.kind === k).length;

const summary = {
  parameters: { minutes, sandboxes: target, memoryMiB, workspaceShare, seed, streamersPerSandbox: kStreamers, lockroom: path.basename(lockroomBin) },
  machine: { cores: os.cpus().length, memGiB: +(os.totalmem() / 2 ** 30).toFixed(1), accel: [...accels].join(", "), load1: { median: median(load), max: Math.max(...load) } },
  firstFullS: firstFullAt === null ? null : firstFullAt / 1000,
  operations: Object.fromEntries([...ops].map(([k, m]) => [k, Object.fromEntries(m)])),
  processes: { started, streamers: byKind("stream"), edits: byKind("edit"), exitedExactlyOnce: exitedOnce, notExactlyOnce: notOnce.length },
  output: { messages: outputMessages, MiB: +(outputBytes / 2 ** 20).toFixed(1) },
  reviewCycles,
  conflicts,
  rssMiB: { start: mib(rss.start), end: mib(rss.end), peak: mib(rss.peak), idleBefore: idleBefore && mib(idleBefore.rssKiB), idleAfter: idleAfter && mib(idleAfter.rssKiB) },
  fds: { ...fds, idleBefore: idleBefore?.fds, idleAfter: idleAfter?.fds, gainedWithNoSandbox: fdsGained, storeLocksKept },
  qemuChildren: qemu,
  growth,
  orphans: { qemu: orphans.length, vmDirs: vmLeft.length },
  workspace: { repos: repos.length, files: hostFiles, differencesAtEnd: hostDiffs, differencesDuringRun: midRunDiffs },
  latencyMs: Object.fromEntries([...latencies].map(([m, xs]) => [m, { n: xs.length, p50: median(xs), p95: quantile(xs, 0.95), max: Math.max(...xs) }])),
  signalToExitMs: { n: signalLatency.length, p50: median(signalLatency), p95: quantile(signalLatency, 0.95), max: Math.max(...signalLatency) },
  lockroomLog: { ...logCounts, exit },
  logMessages,
  protocolErrors: conn.protocolErrors.slice(0, 20),
  anomalies,
};
for (const e of conn.protocolErrors.slice(0, 10)) anomaly("protocol", e);
summary.anomalies = anomalies;
fs.writeFileSync(path.join(outDir, "summary.json"), JSON.stringify(summary, null, 2) + "\n");

const header = "t_s,rss_kib,hwm_kib,fds,threads,cpu_s,qemu,sandboxes,processes,inflight,output_kib,load1,tag";
fs.writeFileSync(
  path.join(outDir, "samples.csv"),
  [header, ...samples.map((s) => [s.t.toFixed(1), s.rssKiB, s.hwmKiB, s.fds, s.threads, s.cpuS.toFixed(2), s.qemu, s.sandboxes, s.processes, s.inflight, s.outputKiB, s.load1.toFixed(2), s.tag].join(","))].join("\n") + "\n",
);

const plot = renderPlot(samples.filter((s) => !s.tag), {
  svgPath: path.join(outDir, "soak.svg"),
  pngPath: path.join(outDir, "soak.png"),
  title: `lockroom soak: ${target} sandboxes × ${kStreamers} streaming processes, ${minutes} min (${os.cpus().length} cores, ${[...accels].join(", ").toUpperCase()})`,
  endS: soakEndedAt / 1000,
  warmupS: warmupMs / 1000,
  windows: [
    [warmupMs / 1000, warmupMs / 1000 + windowS],
    [soakEndedAt / 1000 - windowS, soakEndedAt / 1000],
  ],
});

// summary.md: the tables docs/reliability.md takes.
const f1 = (x) => (typeof x === "number" && Number.isFinite(x) ? x.toFixed(1) : String(x));
const md = [];
md.push(`# lockroom soak: ${minutes} min, ${target} sandboxes (seed ${seed})`, "");
md.push(`Machine: ${os.cpus().length} cores, ${summary.machine.memGiB} GiB, guests under ${summary.machine.accel.toUpperCase()}; 1-minute load median ${f1(median(load))}, max ${f1(Math.max(...load))}. ${target} sandboxes first all live after ${f1(summary.firstFullS)} s.`, "");
md.push("| operation | total | outcomes |", "|---|---|---|");
for (const [k, m] of [...ops].sort((a, b) => a[0].localeCompare(b[0]))) {
  const total = [...m.values()].reduce((a, b) => a + b, 0);
  md.push(`| ${k} | ${total} | ${[...m].map(([o, n]) => `${o}: ${n}`).join(", ")} |`);
}
md.push("", "| check | result |", "|---|---|");
md.push(`| processes started / exited exactly once | ${started} (${byKind("stream")} streaming, ${byKind("edit")} edits) / ${exitedOnce}${notOnce.length ? ` — **${notOnce.length} not**` : ""} |`);
md.push(`| output received | ${outputMessages} process/output messages, ${summary.output.MiB} MiB, lines checked in order |`);
md.push(`| review cycles (edit, list, diff, apply, discard) | ${reviewCycles} on ${repos.length} host repositories; ${conflicts.length} files answered \`conflict\` where the host had changed since the review's base (expected) |`);
md.push(`| lockroom RSS start / end / peak | ${f1(mib(rss.start))} / ${f1(mib(rss.end))} / ${f1(mib(rss.peak))} MiB (no sandbox: ${f1(summary.rssMiB.idleBefore)} before, ${f1(summary.rssMiB.idleAfter)} after) |`);
md.push(`| lockroom descriptors start / end / peak | ${fds.start} / ${fds.end} / ${fds.peak} (no sandbox: ${idleBefore?.fds} before, ${idleAfter?.fds} after, of which ${storeLocksKept} workspace store locks kept per folder${fdsGained.length ? `; also gained: ${fdsGained.join(", ")}` : ""}) |`);
md.push(`| RSS median, first / last minute after warm-up | ${f1(growth.rssFirstMiB)} / ${f1(growth.rssLastMiB)} MiB (${growth.rssGrew ? "**grew**" : "no growth"}; windows of ${f1(windowS)} s after ${f1(warmupMs / 1000)} s warm-up) |`);
md.push(`| descriptors median, first / last minute after warm-up | ${growth.fdsFirst} / ${growth.fdsLast} (${growth.fdsGrew ? "**grew**" : "no growth"}; live sandboxes ${growth.sandboxesFirst} / ${growth.sandboxesLast}, threads ${growth.threadsFirst} / ${growth.threadsLast}) |`);
md.push(`| QEMU children start / end / peak | ${qemu.start} / ${qemu.end} / ${qemu.peak} |`);
md.push(`| orphan QEMUs after lockroom exited | ${orphans.length} (VM state dirs left: ${vmLeft.length}) |`);
md.push(`| host workspace equals the applies' answers | ${hostDiffs === 0 && midRunDiffs === 0 ? "yes" : "**no**"}: ${hostFiles} files in ${repos.length} repositories, ${hostDiffs} differences at the end, ${midRunDiffs} found after applies during the run |`);
md.push(`| lockroom's exit | code ${exit.code}${exit.signal ? `, signal ${exit.signal}` : ""}; ${logCounts.warn} warnings, ${logCounts.error} errors in its log |`);
md.push("", "| request | n | p50 ms | p95 ms | max ms |", "|---|---|---|---|---|");
for (const [m, l] of Object.entries(summary.latencyMs).sort()) md.push(`| ${m} | ${l.n} | ${l.p50} | ${l.p95} | ${l.max} |`);
md.push(`| process/signal → process/exited | ${signalLatency.length} | ${median(signalLatency)} | ${quantile(signalLatency, 0.95)} | ${Math.max(...signalLatency)} |`);
md.push("", `Anomalies: ${anomalies.length}`);
for (const a of anomalies.slice(0, 50)) md.push(`- [${(a.t / 1000).toFixed(1)} s] ${a.check}: ${a.message}`);
if (anomalies.length > 50) md.push(`- … ${anomalies.length - 50} more in events.jsonl`);
md.push("", plot.png ? "Plot: soak.png (soak.svg)" : `Plot: soak.svg (no PNG: ${plot.why})`);
fs.writeFileSync(path.join(outDir, "summary.md"), md.join("\n") + "\n");
events.end();
logFile.end();
process.stdout.write(md.join("\n") + "\n");
process.exit(anomalies.length ? 1 : 0);
