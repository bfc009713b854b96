// Test support: the lockroom binary under test, temporary git workspaces, byte-for-byte folder
// snapshots, and a started client that is closed at the end of the test.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { TestContext } from "node:test";
import { LockroomClient, type ClientOptions } from "../src/core/client.js";

/** The binary: $LOCKROOM (tests/run passes the build's). */
export function lockroomBinary(): string {
  const bin = process.env.LOCKROOM;
  if (!bin) throw new Error("set LOCKROOM to the lockroom binary (extensions/vscode/run --lockroom BIN does)");
  return bin;
}

export function tempDir(t: TestContext, prefix = "lockroom-vscode-"): string {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A git repository with one commit holding `files`. */
export function gitWorkspace(t: TestContext, files: Record<string, string>): string {
  const dir = tempDir(t, "lockroom-vscode-ws-");
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  const git = (...args: string[]) => execFileSync("git", args, { cwd: dir, stdio: "ignore" });
  git("init", "-q", "-b", "main");
  git("add", "-A");
  git("-c", "user.name=test", "-c", "user.email=test@example.invalid", "commit", "-q", "--allow-empty", "-m", "start");
  return dir;
}

/** Every file under `dir` (.git included) with its bytes, for exact before/after comparisons. */
export function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (rel: string) => {
    for (const entry of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const name = path.join(rel, entry.name);
      if (entry.isDirectory()) walk(name);
      else if (entry.isSymbolicLink()) out.set(name, "-> " + fs.readlinkSync(path.join(dir, name)));
      else out.set(name, fs.readFileSync(path.join(dir, name)).toString("base64"));
    }
  };
  walk("");
  return out;
}

/** A standalone lockroom (its sandboxes end with it), closed after the test. */
export async function startClient(t: TestContext, options: Partial<ClientOptions> = {}): Promise<LockroomClient> {
  const log: string[] = [];
  const client = await LockroomClient.start({
    lockroom: lockroomBinary(),
    serveArgs: ["--standalone"],
    onLog: (line) => log.push(line),
    ...options,
  });
  t.after(async () => {
    const exit = await client.close(15000);
    if (!exit.expected && process.env.LOCKROOM_TEST_TRACE) console.error(log.join("\n"));
  });
  return client;
}

/** Resolves when `predicate` holds, polling every 20 ms; rejects naming `what` after `timeoutMs`. */
export async function until(predicate: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
