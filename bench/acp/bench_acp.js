// @ts-check
// ACP face benchmark: what a user of an ACP editor waits for, with lockroom around the agent and
// without it (the same scripted agent run directly on the host, the peer), in one run.
//   new→update  from sending session/new to the first agent_message_chunk of a prompt sent as
//                soon as session/new answered (a new thread: what the user waits for before
//                the first word); lockroom makes a sandbox per session here
//   quiet turn   a prompt whose turn changes no file (no review)
//   edit turn    a prompt whose agent writes one file through fs/write_text_file; with lockroom
//                the turn ends with the review, answered at once (allow), and the file applied
// Each figure is the median of N sessions (default 7) in one agent process per side; the first
// session of each side is a warm-up and is not counted. Prints a table with medians and ratios.
//   node bench/acp/bench_acp.js --lockroom BIN [--runs N]
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { Editor, choose } from "../../tests/acp/driver/editor.js";
import { makeKitDir, kitName, guestScript } from "../../tests/acp/driver/kit.js";
import { makeWorkspace } from "../../tests/acp/driver/check.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const script = path.join(here, "../../tests/acp/scripted_agent.py");
const arg = (/** @type {string} */ name, /** @type {string} */ fallback) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const lockroom = arg("--lockroom", "");
const runs = Number(arg("--runs", "7"));
if (!lockroom) {
  console.error("usage: node bench/acp/bench_acp.js --lockroom BIN [--runs N]");
  process.exit(2);
}

/** @param {number[]} xs */
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** One side: an agent process, sessions one after another. @param {"direct" | "lockroom"} side */
async function measure(side) {
  const kitDir = makeKitDir(script);
  const ws = makeWorkspace({ "README.md": "# bench\n" }, { git: true });
  const argv = side === "direct" ? ["python3", script] : [lockroom, "--log-level=warn", "acp", "--kit", kitName, "--", "python3", guestScript];
  const env = { ...process.env, LOCKROOM_KIT_PATH: kitDir };
  const editor = new Editor({ argv, cwd: ws, env, mode: side === "direct" ? "direct" : "lockroom", workspace: ws });
  editor.policy = (req) => choose(req, "allow_once");
  /** @type {{ first: number[], quiet: number[], edit: number[] }} */
  const out = { first: [], quiet: [], edit: [] };
  const started = Date.now();
  await editor.initialize();
  const initializeMs = Date.now() - started;
  try {
    for (let i = 0; i <= runs; i++) {
      const t0 = performance.now();
      const seen = editor.notifications.length;
      const { sessionId } = await editor.agent.request("session/new", { cwd: ws, mcpServers: [] });
      const quiet = editor.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: JSON.stringify([{ say: "hello" }]) }] });
      await editor.until(() => editor.notifications.slice(seen).some((n) => n.sessionId === sessionId && n.update.sessionUpdate === "agent_message_chunk"), 300000, "the first update");
      const first = performance.now() - t0;
      await quiet;
      const t1 = performance.now();
      await editor.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: JSON.stringify([{ say: "again" }]) }] });
      const quietMs = performance.now() - t1;
      const t2 = performance.now();
      const name = `file-${i}.txt`;
      await editor.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: JSON.stringify([{ write: name, text: "x\n" }]) }] });
      const editMs = performance.now() - t2;
      if (side === "lockroom" && fs.readFileSync(path.join(ws, name), "utf8") !== "x\n") throw new Error(`${name} was not applied`);
      if (side === "lockroom") await editor.agent.request("session/close", { sessionId });
      if (i === 0) continue; // warm-up
      out.first.push(first);
      out.quiet.push(quietMs);
      out.edit.push(editMs);
    }
  } finally {
    await editor.close(30000);
    fs.rmSync(ws, { recursive: true, force: true });
    fs.rmSync(kitDir, { recursive: true, force: true });
  }
  return { initializeMs, first: median(out.first), quiet: median(out.quiet), edit: median(out.edit) };
}

const direct = await measure("direct");
const boxed = await measure("lockroom");
const row = (/** @type {string} */ what, /** @type {number} */ a, /** @type {number} */ b) =>
  `| ${what} | ${a.toFixed(1)} | ${b.toFixed(1)} | ${(b / a).toFixed(1)}× | ${b >= a ? "+" : "−"}${Math.abs(b - a).toFixed(1)} |`;
console.log(`ACP face, median of ${runs} sessions per side (after one warm-up), ms`);
console.log("| what | agent on the host (peer) | agent in lockroom | ratio | lockroom adds |");
console.log("|---|---|---|---|---|");
console.log(row("initialize (process start to answer)", direct.initializeMs, boxed.initializeMs));
console.log(row("session/new → first agent_message_chunk", direct.first, boxed.first));
console.log(row("a turn that changes no file", direct.quiet, boxed.quiet));
console.log(row("a turn that writes one file (lockroom: + review, allowed, applied)", direct.edit, boxed.edit));
console.log(`review overhead per turn (lockroom edit turn − quiet turn): ${(boxed.edit - boxed.quiet).toFixed(1)} ms`);
