#!/usr/bin/env node
// @ts-check
// The ACP test driver: the official ACP SDK as the editor, running named scenarios against an
// agent and printing TAP lines, then "N passed, N failed, N skipped"; exit status 1 on failure.
//
//   node driver/main.js [--lockroom BIN | --fake-wrapper] [--guest BIN] [--only NAME,…] [--trace] [--list]
//                       [-- AGENT ARGS…]
//
// direct/*    the scenarios of scenarios.js against AGENT run directly on the host (default:
//             the scripted agent beside this folder, under python3); the driver serves fs/terminal.
// guest/*     with --guest BIN (or --lockroom BIN): the same, the scripted agent running in a guest
//             under `BIN run --kit acp-scripted` with its stdio piped through; the driver still
//             serves fs/terminal. This checks the kit and the agent under the guest's python3.
//             Plus editor-disappears (closing lockroom's stdin leaves no QEMU behind).
// lockroom/*  with --lockroom BIN: the same scenarios through `BIN acp --kit acp-scripted --
//             python3 /opt/lockroom-test/scripted_agent.py`, where the editor must never be asked
//             for fs/terminal, plus the wrapper's own scenarios (wrapper_scenarios.js).
// --fake-wrapper: the lockroom/* scenarios against fake_lockroom.py (a host-only stand-in that
// checks the driver's wrapper scenarios themselves; editor-disappears and the shared scenarios
// (shared_scenarios.js) need a real lockroom).
// Modes without their BIN print "# SKIP". The kit is made at run time (kit.js) and given as
// LOCKROOM_KIT_PATH. --trace prints the wire and the agents' stderr.
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { Editor, choose } from "./editor.js";
import { makeWorkspace } from "./check.js";
import { guestScript, kitName, makeKitDir } from "./kit.js";
import { scenarios } from "./scenarios.js";
import { isReview, lifecycleScenarios, wrapperScenarios } from "./wrapper_scenarios.js";
import { sharedScenarios } from "./shared_scenarios.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const scriptFile = path.resolve(here, "..", "scripted_agent.py");

/**
 * What a scenario gets: `start(files)` makes a workspace holding `files` and connects an editor
 * to a new agent process on it (both cleaned up after the scenario).
 * @typedef {{
 *   mode: "direct" | "guest" | "lockroom",
 *   unwrapped: boolean,
 *   lockroom?: string,
 *   bin?: string,
 *   agentCwd: string,
 *   turnTimeoutMs: number,
 *   start: (files: Record<string, string> | null, options?: StartOptions) => Promise<{ editor: Editor, ws: string }>,
 *   host: (rel: string) => string,
 *   policy: (answer: import("./editor.js").PermissionPolicy) => import("./editor.js").PermissionPolicy,
 * }} RunContext
 */

/**
 * `files: null` starts another editor on the scenario's last workspace; `acpArgs` go after
 * `lockroom acp` (lockroom mode).
 * @typedef {{ acpArgs?: string[] }} StartOptions
 */

/** @param {string[]} argv */
function parseArgs(argv) {
  const opts = { lockroom: "", fake: false, guest: "", only: /** @type {string[]} */ ([]), trace: false, list: false, agent: ["python3", scriptFile] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--") {
      if (argv.length > i + 1) opts.agent = argv.slice(i + 1);
      break;
    } else if (a === "--lockroom") opts.lockroom = path.resolve(argv[++i] ?? "");
    else if (a === "--fake-wrapper") opts.fake = true;
    else if (a === "--guest") opts.guest = path.resolve(argv[++i] ?? "");
    else if (a === "--only") opts.only = (argv[++i] ?? "").split(",");
    else if (a === "--trace") opts.trace = true;
    else if (a === "--list") opts.list = true;
    else {
      console.error(`driver: unknown option ${a}\nusage: node driver/main.js [--lockroom BIN | --fake-wrapper] [--guest BIN] [--only NAME,…] [--trace] [--list] [-- AGENT ARGS…]`);
      process.exit(2);
    }
  }
  return opts;
}

/**
 * A fresh context for one scenario in one mode, and its cleanup.
 * @param {"direct" | "guest" | "lockroom"} mode @param {ReturnType<typeof parseArgs>} opts @param {string} kitDir
 */
function makeContext(mode, opts, kitDir) {
  /** @type {Editor[]} */ const editors = [];
  /** @type {string[]} */ const dirs = [];
  let ws = "";
  /** @type {RunContext} */
  const t = {
    mode,
    unwrapped: mode !== "lockroom",
    lockroom: opts.lockroom || undefined,
    bin: { direct: undefined, guest: opts.guest, lockroom: opts.lockroom }[mode] || undefined,
    get agentCwd() {
      return mode === "lockroom" ? "/workspace" : ws;
    },
    turnTimeoutMs: { direct: 10000, guest: 60000, lockroom: 300000 }[mode],
    host: (rel) => (rel ? path.join(ws, rel) : ws),
    // In lockroom mode, the wrapper's end-of-turn reviews are rejected unless a scenario says otherwise.
    policy: (answer) => (req, editor) => (mode === "lockroom" && isReview(editor, req) ? choose(req, "reject_once") : answer(req, editor)),
    async start(files, options = {}) {
      if (files || !ws) {
        ws = makeWorkspace(files ?? {}, { git: mode !== "direct" });
        dirs.push(ws);
      }
      const argv = {
        direct: opts.agent,
        guest: [opts.guest, "--log-level=warn", "run", "--discard", "--no-network", "--kit", kitName, "--", "python3", guestScript],
        lockroom: [opts.lockroom, "acp", ...(options.acpArgs ?? []), "--kit", kitName, "--", "python3", guestScript],
      }[mode];
      const env = mode === "direct" ? process.env : { ...process.env, LOCKROOM_KIT_PATH: kitDir };
      const editor = new Editor({ argv, cwd: ws, env, mode, workspace: ws, trace: opts.trace });
      editor.policy = t.policy((req) => {
        throw new Error(`unexpected session/request_permission: ${JSON.stringify(req.toolCall)}`);
      });
      editors.push(editor);
      return { editor, ws };
    },
  };
  const cleanup = async () => {
    const problems = [];
    const notes = [];
    for (const e of editors) {
      await Promise.race([e.exited, new Promise((r) => setTimeout(r, 200))]); // an exit racing the error
      if (e.child.exitCode !== null || e.child.signalCode !== null)
        notes.push(`${e.options.argv[0]} had exited before the end (code ${e.child.exitCode}, signal ${e.child.signalCode})`);
      if (e.unexpectedCalls.length) problems.push(`the editor was asked for ${e.unexpectedCalls.join(", ")} (the wrapper must serve them)`);
      if (e.policyErrors.length) problems.push(`permission policy: ${e.policyErrors.map((x) => x.message).join("; ")}`);
      await e.close(mode === "direct" ? 3000 : 20000);
    }
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
    return { problems, notes, stderr: editors.map((e) => e.stderr).join("") };
  };
  return { t, cleanup };
}

/** @template T @param {Promise<T>} p @param {number} ms @param {string} what @returns {Promise<T>} */
function withTimeout(p, ms, what) {
  /** @type {NodeJS.Timeout | undefined} */
  let timer;
  const timeout = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms)));
  return /** @type {Promise<T>} */ (Promise.race([p, timeout]).finally(() => clearTimeout(timer)));
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const plan = [
    ...scenarios.map((s) => ({ ...s, mode: /** @type {const} */ ("direct") })),
    ...[...scenarios, ...lifecycleScenarios].map((s) => ({ ...s, mode: /** @type {const} */ ("guest") })),
    ...scenarios.map((s) => ({ ...s, mode: /** @type {const} */ ("lockroom") })),
    ...[...wrapperScenarios, ...sharedScenarios, ...lifecycleScenarios].map((s) => ({ ...s, mode: /** @type {const} */ ("lockroom") })),
  ].filter((s) => !opts.only.length || opts.only.includes(s.name) || opts.only.includes(`${s.mode}/${s.name}`));
  if (opts.list) {
    for (const s of plan) console.log(`${s.mode}/${s.name}`);
    return 0;
  }
  if (opts.fake) opts.lockroom = path.resolve(here, "..", "fake_lockroom.py");
  else if (opts.lockroom && !opts.guest) opts.guest = opts.lockroom;
  const kitDir = opts.lockroom || opts.guest ? makeKitDir(scriptFile) : "";
  console.log("TAP version 13");
  console.log(`1..${plan.length}`);
  let passed = 0, failed = 0, skipped = 0;
  for (const [i, s] of plan.entries()) {
    const name = `${s.mode}/${s.name}`;
    const skip = (s.mode === "lockroom" && !opts.lockroom) || (s.mode === "guest" && !opts.guest) || (opts.fake && (s.name === "editor-disappears" || sharedScenarios.some((x) => x.name === s.name)));
    if (skip) {
      const need = s.mode === "guest" ? "lockroom run (--guest BIN)" : opts.fake ? "a real lockroom acp (not the fake)" : "lockroom acp (--lockroom BIN)";
      console.log(`ok ${i + 1} - ${name} # SKIP needs ${need}`);
      skipped++;
      continue;
    }
    const started = Date.now();
    const { t, cleanup } = makeContext(s.mode, opts, kitDir);
    /** @type {unknown} */
    let error = null;
    try {
      await withTimeout(s.run(t), { direct: 30000, guest: 300000, lockroom: 600000 }[s.mode], name);
    } catch (e) {
      error = e;
    }
    const { problems, notes, stderr } = await cleanup();
    const ms = Date.now() - started;
    if (!error && !problems.length) {
      console.log(`ok ${i + 1} - ${name} (${ms} ms)`);
      passed++;
      continue;
    }
    failed++;
    console.log(`not ok ${i + 1} - ${name} (${ms} ms)`);
    const text = [error ? (error instanceof Error ? error.stack ?? error.message : String(error)) : "", ...problems].filter(Boolean).join("\n");
    for (const line of [...text.split("\n"), ...notes]) console.log(`  # ${line}`);
    if (stderr) for (const line of stderr.trimEnd().split("\n").slice(-20)) console.log(`  # agent stderr: ${line}`);
  }
  if (kitDir) fs.rmSync(kitDir, { recursive: true, force: true });
  console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(e);
    process.exit(2);
  },
);
