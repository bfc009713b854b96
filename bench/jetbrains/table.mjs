// Reads the JSON lines of BenchCore.java and bench_vscode_core.mjs (stdin) and prints the
// Markdown table of bench/run-jetbrains.sh: per round trip, the median and p90 of each client
// and the ratio of the medians (IntelliJ core / VS Code core).
import * as fs from "node:fs";

const rows = fs.readFileSync(0, "utf8").split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
const by = Object.fromEntries(rows.map((r) => [r.client, r]));
const q = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
const f = (x) => (x < 10 ? x.toFixed(2) : x.toFixed(1));
const what = {
  echo: "`lockroom/echo` (the connection alone)",
  sandboxList: "`sandbox/list` (one sandbox)",
  processRun: "`process/start` of `true` → `process/exited`",
  changesList: "`changes/list`, 3 of 20 files changed (a fresh look at the guest)",
};
const jb = by.jetbrains;
const vs = by.vscode;
console.log(`| round trip | n | IntelliJ core median (p90) | VS Code core median (p90) | ratio |`);
console.log(`|---|---|---|---|---|`);
for (const [k, label] of Object.entries(what)) {
  const a = jb[k];
  const b = vs?.[k];
  const cell = (xs) => (xs ? `${f(q(xs, 0.5))} ms (${f(q(xs, 0.9))})` : "—");
  const ratio = b ? `${(q(a, 0.5) / q(b, 0.5)).toFixed(2)}×` : "—";
  console.log(`| ${label} | ${a.length} | ${cell(a)} | ${cell(b)} | ${ratio} |`);
}
console.log(`| a second start: spawn \`lockroom serve --stdio --standalone\` + initialize | 1 | ${f(jb.startMs)} ms | ${vs ? f(vs.startMs) + " ms" : "—"} | ${vs ? (jb.startMs / vs.startMs).toFixed(2) + "×" : "—"} |`);
console.log();
console.log(`guests: ${jb.accel}; medians of the measured rounds after the warm-up ones`);
