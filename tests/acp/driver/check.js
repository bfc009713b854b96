// @ts-check
// Small helpers the scenarios share: exact-value assertions whose failure message names what
// was checked, workspace folders made per scenario, and a byte-for-byte snapshot of a folder
// (to prove that the host workspace did not change).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

/** Deep, exact equality. @param {unknown} actual @param {unknown} expected @param {string} what */
export function eq(actual, expected, what) {
  assert.deepStrictEqual(actual, expected, `${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
}

/** @param {unknown} value @param {string} what @returns {asserts value} */
export function ok(value, what) {
  assert.ok(value, what);
}

/**
 * A fresh workspace folder (realpath, so paths compare exactly) holding `files`; with `git`, a
 * repository with one commit of them (lockroom snapshots tracked and untracked files alike).
 * @param {Record<string, string>} files @param {{ git?: boolean }} [options]
 */
export function makeWorkspace(files, options = {}) {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "lockroom-acp-ws-")));
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  if (options.git) {
    const git = (/** @type {string[]} */ ...args) => execFileSync("git", ["-C", dir, ...args], { stdio: "ignore" });
    git("init", "-q", "-b", "main");
    git("add", "-A");
    git("-c", "user.name=test", "-c", "user.email=test@localhost", "commit", "-q", "-m", "base", "--allow-empty");
  }
  return dir;
}

/** Every file under `dir` (including .git) with its bytes, as a sorted map. @param {string} dir */
export function snapshot(dir) {
  /** @type {Record<string, string>} */
  const out = {};
  /** @param {string} rel */
  const walk = (rel) => {
    for (const entry of fs.readdirSync(path.join(dir, rel), { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const name = path.join(rel, entry.name);
      if (entry.isDirectory()) walk(name);
      else if (entry.isSymbolicLink()) out[name] = `symlink -> ${fs.readlinkSync(path.join(dir, name))}`;
      else out[name] = fs.readFileSync(path.join(dir, name)).toString("base64");
    }
  };
  walk("");
  return out;
}

/** The text of a host file, or null when it does not exist. @param {string} file */
export function readOrNull(file) {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return null;
  }
}

/**
 * Two snapshots are equal; on failure, names the paths added, removed and changed (with their
 * text when short) instead of printing every file.
 * @param {Record<string, string>} actual @param {Record<string, string>} expected @param {string} what
 */
export function eqTree(actual, expected, what) {
  const text = (/** @type {string | undefined} */ b64) => {
    const s = b64 === undefined ? "(none)" : Buffer.from(b64, "base64").toString("utf8");
    return JSON.stringify(s.length > 80 ? `${s.slice(0, 80)}…` : s);
  };
  const paths = [...new Set([...Object.keys(actual), ...Object.keys(expected)])].sort();
  const diffs = paths.filter((p) => actual[p] !== expected[p]).map((p) => `${p}: expected ${text(expected[p])}, got ${text(actual[p])}`);
  if (diffs.length) throw new assert.AssertionError({ message: `${what}: ${diffs.length} path(s) differ\n${diffs.join("\n")}` });
}
