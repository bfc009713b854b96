// Support for the ACP tests against the real `lockroom acp`: the `acp-scripted` kit made at run
// time in a temp folder given as LOCKROOM_KIT_PATH (it extends the built-in `python` kit and
// writes tests/acp/scripted_agent.py to /opt/lockroom-test/; tests/acp/driver/kit.js makes it), a
// chat started on a fresh git workspace and closed after the test, waiting on the model, and the
// QEMU processes and sandboxes that lockroom runs.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import type { TestContext } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { AgentDefinition } from "../../src/core/acp/agents.js";
import type { ChatSnapshot } from "../../src/core/acp/chatTypes.js";
import { ChatSession } from "../../src/core/acp/chatSession.js";
import { gitWorkspace, lockroomBinary } from "../support.js";

export const kitName = "acp-scripted";
export const guestScript = "/opt/lockroom-test/scripted_agent.py";
export const scriptedAgent: AgentDefinition = { name: "scripted", kits: [kitName], argv: ["python3", guestScript] };

/** The repository's root: the first folder above this file holding tests/acp/scripted_agent.py. */
export function repoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(dir, "tests", "acp", "scripted_agent.py"))) {
    const up = path.dirname(dir);
    if (up === dir) throw new Error("tests/acp/scripted_agent.py not found above the test");
    dir = up;
  }
  return dir;
}

let kitDir: string | undefined;

/** The kit folder (made by tests/acp/driver/kit.js, the one maker of it), once per test process, removed at exit. */
export async function scriptedKitDir(): Promise<string> {
  if (kitDir) return kitDir;
  const maker = pathToFileURL(path.join(repoRoot(), "tests", "acp", "driver", "kit.js")).href;
  const { makeKitDir } = (await import(maker)) as { makeKitDir(scriptFile: string): string };
  const dir = makeKitDir(path.join(repoRoot(), "tests", "acp", "scripted_agent.py"));
  process.once("exit", () => fs.rmSync(dir, { recursive: true, force: true }));
  kitDir = dir;
  return dir;
}

/** A scripted turn: the prompt text is the JSON list of steps (tests/acp/scripted_agent.py). */
export function script(...steps: object[]): string {
  return JSON.stringify(steps);
}

/**
 * The scripted agent behind `lockroom acp` on a fresh git workspace holding `files`; closed after
 * the test (lockroom's log is printed when LOCKROOM_TEST_TRACE is set or the close goes wrong).
 */
export async function startChat(t: TestContext, files: Record<string, string>): Promise<{ chat: ChatSession; ws: string; log: string[] }> {
  const ws = gitWorkspace(t, files);
  const log: string[] = [];
  const chat = await ChatSession.start({
    lockroom: lockroomBinary(),
    agent: scriptedAgent,
    cwd: ws,
    env: { ...process.env, LOCKROOM_KIT_PATH: await scriptedKitDir() },
    onLog: (line) => log.push(line),
  });
  t.after(async () => {
    await chat.close(20_000);
    const exit = await chat.connection.exited();
    if (process.env.LOCKROOM_TEST_TRACE || exit.code !== 0) console.error(`lockroom acp (exit ${JSON.stringify(exit)}):\n${log.join("\n")}`);
  });
  return { chat, ws, log };
}

/** Resolves with the snapshot once `predicate` holds for it, checked on each change event. */
export function untilModel(chat: ChatSession, predicate: (s: ChatSnapshot) => boolean, timeoutMs: number, what: string): Promise<ChatSnapshot> {
  return new Promise((resolve, reject) => {
    const check = () => {
      const s = chat.model.snapshot();
      if (!predicate(s)) return false;
      stop();
      clearTimeout(timer);
      resolve(s);
      return true;
    };
    const stop = chat.model.onChange(() => void check());
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; the model: ${JSON.stringify(chat.model.snapshot().entries)}`));
    }, timeoutMs);
    check();
  });
}

/** An entry without its id and version, for exact comparisons of what is shown. */
export function shown<E extends { id: number; version: number }>(entry: E): Omit<E, "id" | "version"> {
  const { id: _id, version: _version, ...rest } = entry;
  return rest;
}

export interface Sandbox {
  id: string;
  ownerPid: number;
  qemuPid: number;
}

/** `lockroom ps --json`'s sandboxes. */
export function sandboxes(): Sandbox[] {
  return (JSON.parse(execFileSync(lockroomBinary(), ["ps", "--json"], { encoding: "utf8" })) as { sandboxes: Sandbox[] }).sandboxes;
}

/** The qemu-system processes running now, with their parents and command lines. */
export function qemuProcesses(): { pid: number; ppid: number; args: string }[] {
  let pids: number[] = [];
  try {
    pids = execFileSync("pgrep", ["-f", "qemu-system"], { encoding: "utf8" }).trim().split("\n").map(Number);
  } catch {
    // pgrep exits 1 when nothing matches
  }
  return pids.flatMap((pid) => {
    try {
      const args = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
      const ppid = Number(fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")[1]);
      return args.includes("qemu-system") ? [{ pid, ppid, args }] : [];
    } catch {
      return []; // gone meanwhile
    }
  });
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
