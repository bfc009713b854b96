// The soak's plot: lockroom's RSS, its open descriptors, and its QEMU children next to the live
// sandboxes, over time, as an SVG; turned into a PNG by a headless chromium when one is found
// ($CHROMIUM, else chromium / chromium-browser / google-chrome on PATH). No npm packages.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";

const W = 960;
const panelH = 190;
const left = 70;
const right = 150;
const top = 44;
const gap = 34;

// About 5 round tick values covering [lo, hi].
function ticks(lo, hi) {
  const span = hi - lo || 1;
  const raw = span / 5;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9; v += step) out.push(+v.toFixed(10));
  return out;
}

const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;");

/**
 * samples: [{t (s), rssKiB, fds, qemu, sandboxes}]; options: {svgPath, pngPath, title, warmupS,
 * windows: [[from, to], ...] (s), endS (where the teardown starts)}. Returns {svg, png (path or null), why (when no PNG)}.
 */
export function renderPlot(samples, { svgPath, pngPath, title, warmupS = 0, windows = [], endS }) {
  const tMax = Math.max(1, ...samples.map((s) => s.t));
  const minutes = tMax >= 120;
  const xUnit = minutes ? 60 : 1;
  const x = (t) => left + ((W - left - right) * t) / tMax;
  const panels = [
    { label: "RSS (MiB)", series: [{ name: "lockroom RSS", color: "#1f77b4", get: (s) => s.rssKiB / 1024 }] },
    { label: "open descriptors", series: [{ name: "lockroom fds", color: "#d62728", get: (s) => s.fds }] },
    {
      label: "count",
      series: [
        { name: "QEMU children", color: "#2ca02c", get: (s) => s.qemu },
        { name: "live sandboxes", color: "#9467bd", get: (s) => s.sandboxes, dash: "5,3" },
      ],
    },
  ];
  const H = top + panels.length * (panelH + gap) + 30;
  const parts = [];
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="DejaVu Sans, Arial, sans-serif" font-size="12">`);
  parts.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  parts.push(`<text x="${W / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${esc(title)}</text>`);
  panels.forEach((panel, i) => {
    const y0 = top + i * (panelH + gap);
    const values = samples.flatMap((s) => panel.series.map((se) => se.get(s))).filter(Number.isFinite);
    const vMax = Math.max(1, ...values) * 1.08;
    const vMin = 0;
    const y = (v) => y0 + panelH - ((v - vMin) / (vMax - vMin)) * panelH;
    // Warm-up (grey) and the two windows compared for growth (blue).
    parts.push(`<rect x="${x(0)}" y="${y0}" width="${x(warmupS) - x(0)}" height="${panelH}" fill="#eeeeee"/>`);
    for (const [a, b] of windows) parts.push(`<rect x="${x(a)}" y="${y0}" width="${Math.max(0, x(b) - x(a))}" height="${panelH}" fill="#e3eefa"/>`);
    for (const v of ticks(vMin, vMax)) {
      parts.push(`<line x1="${left}" x2="${W - right}" y1="${y(v)}" y2="${y(v)}" stroke="#dddddd"/>`);
      parts.push(`<text x="${left - 6}" y="${y(v) + 4}" text-anchor="end">${v}</text>`);
    }
    for (const t of ticks(0, tMax / xUnit)) {
      parts.push(`<line x1="${x(t * xUnit)}" x2="${x(t * xUnit)}" y1="${y0 + panelH}" y2="${y0 + panelH + 4}" stroke="black"/>`);
      parts.push(`<text x="${x(t * xUnit)}" y="${y0 + panelH + 16}" text-anchor="middle">${t}</text>`);
    }
    if (endS !== undefined) {
      parts.push(`<line x1="${x(endS)}" x2="${x(endS)}" y1="${y0}" y2="${y0 + panelH}" stroke="#555555" stroke-dasharray="3,3"/>`);
      if (i === 0) parts.push(`<text x="${x(endS) + 4}" y="${y0 + 14}" fill="#555555">teardown</text>`);
    }
    parts.push(`<rect x="${left}" y="${y0}" width="${W - left - right}" height="${panelH}" fill="none" stroke="black"/>`);
    parts.push(`<text transform="translate(18 ${y0 + panelH / 2}) rotate(-90)" text-anchor="middle">${esc(panel.label)}</text>`);
    panel.series.forEach((se, k) => {
      const pts = samples.filter((s) => Number.isFinite(se.get(s))).map((s) => `${x(s.t).toFixed(1)},${y(se.get(s)).toFixed(1)}`);
      parts.push(`<polyline points="${pts.join(" ")}" fill="none" stroke="${se.color}" stroke-width="1.5"${se.dash ? ` stroke-dasharray="${se.dash}"` : ""}/>`);
      const ly = y0 + 16 + k * 18;
      parts.push(`<line x1="${W - right + 10}" x2="${W - right + 30}" y1="${ly - 4}" y2="${ly - 4}" stroke="${se.color}" stroke-width="2"${se.dash ? ` stroke-dasharray="${se.dash}"` : ""}/>`);
      parts.push(`<text x="${W - right + 35}" y="${ly}">${esc(se.name)}</text>`);
    });
  });
  const yAxis = top + panels.length * (panelH + gap) - gap + 32;
  parts.push(`<text x="${(left + W - right) / 2}" y="${yAxis}" text-anchor="middle">time since start (${minutes ? "min" : "s"}); grey: warm-up, blue: the first and last window compared for growth</text>`);
  parts.push("</svg>");
  const svg = parts.join("\n");
  fs.writeFileSync(svgPath, svg + "\n");

  const chromium = findChromium();
  if (!chromium) return { svg: svgPath, png: null, why: "no chromium found (set CHROMIUM)" };
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "lockroom-soak-chromium-"));
  const args = ["--headless", "--disable-gpu", "--hide-scrollbars", `--user-data-dir=${profile}`, `--window-size=${W},${H}`, `--screenshot=${pngPath}`, pathToFileURL(svgPath).href];
  if (process.getuid?.() === 0) args.unshift("--no-sandbox"); // chromium refuses to run as root otherwise
  const r = spawnSync(chromium, args, { encoding: "utf8", timeout: 60_000 });
  fs.rmSync(profile, { recursive: true, force: true });
  if (r.status !== 0 || !fs.existsSync(pngPath)) return { svg: svgPath, png: null, why: `chromium failed: ${(r.stderr ?? "").split("\n").slice(-3).join(" ")}` };
  return { svg: svgPath, png: pngPath };
}

function findChromium() {
  if (process.env.CHROMIUM) return process.env.CHROMIUM;
  for (const name of ["chromium", "chromium-browser", "google-chrome"]) {
    for (const dir of (process.env.PATH ?? "").split(":")) {
      const p = path.join(dir, name);
      if (dir && fs.existsSync(p)) return p;
    }
  }
  return null;
}
