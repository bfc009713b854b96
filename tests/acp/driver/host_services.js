// @ts-check
// The editor's own fs/* and terminal/* services, on a host folder: what the driver serves when it
// runs the scripted agent directly on the host (the self-test). Through `lockroom acp` these are
// served by the wrapper inside the guest, and the driver refuses them (see editor.js).
// Paths must be absolute and inside the workspace; terminals keep at most outputByteLimit bytes,
// dropping from the beginning at a UTF-8 character boundary, as the ACP schema asks.
import { spawn } from "node:child_process";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import * as acp from "@agentclientprotocol/sdk";

/** @param {string} root @param {string} p */
function inside(root, p) {
  if (!path.isAbsolute(p)) throw acp.RequestError.invalidParams({ path: p }, "path must be absolute");
  const resolved = path.resolve(p);
  if (resolved !== root && !resolved.startsWith(root + path.sep))
    throw acp.RequestError.invalidParams({ path: p }, `path is outside the workspace ${root}`);
  return resolved;
}

/** @param {string} root @param {acp.ReadTextFileRequest} params @returns {Promise<acp.ReadTextFileResponse>} */
export async function readTextFile(root, params) {
  const file = inside(root, params.path);
  let text;
  try {
    text = await fs.readFile(file, "utf8");
  } catch (e) {
    throw acp.RequestError.resourceNotFound(file);
  }
  if (params.line == null && params.limit == null) return { content: text };
  const lines = text.split(/(?<=\n)/);
  const start = Math.max(0, (params.line ?? 1) - 1);
  return { content: lines.slice(start, params.limit == null ? undefined : start + params.limit).join("") };
}

/** @param {string} root @param {acp.WriteTextFileRequest} params @returns {Promise<acp.WriteTextFileResponse>} */
export async function writeTextFile(root, params) {
  const file = inside(root, params.path);
  await fs.mkdir(path.dirname(file), { recursive: true });
  await fs.writeFile(file, params.content);
  return {};
}

/** Keeps the last `limit` bytes of `buf`, starting on a UTF-8 character boundary. @param {Buffer} buf @param {number} limit */
export function keepTail(buf, limit) {
  if (buf.length <= limit) return buf;
  let start = buf.length - limit;
  while (start < buf.length && (buf[start] & 0xc0) === 0x80) start++;
  return buf.subarray(start);
}

/** One running or finished command of terminal/create. */
class HostTerminal {
  /** @param {acp.CreateTerminalRequest} params @param {string} root */
  constructor(params, root) {
    this.limit = params.outputByteLimit ?? Infinity;
    this.output = Buffer.alloc(0);
    this.truncated = false;
    const env = { ...process.env };
    for (const v of params.env ?? []) env[v.name] = v.value;
    this.child = spawn(params.command, params.args ?? [], { cwd: params.cwd ?? root, env, stdio: ["ignore", "pipe", "pipe"] });
    /** @param {Buffer} chunk */
    const take = (chunk) => {
      const all = Buffer.concat(/** @type {Uint8Array[]} */ ([this.output, chunk]));
      if (all.length > this.limit) this.truncated = true;
      this.output = keepTail(all, this.limit);
    };
    this.child.stdout?.on("data", take);
    this.child.stderr?.on("data", take);
    /** @type {Promise<acp.WaitForTerminalExitResponse>} */
    this.exited = new Promise((resolve) => {
      this.child.on("error", (e) => {
        take(Buffer.from(`${e.message}\n`));
        resolve({ exitCode: 127, signal: null });
      });
      this.child.on("close", (code, signal) => resolve({ exitCode: code, signal }));
    });
    /** @type {acp.WaitForTerminalExitResponse | null} */
    this.exitStatus = null;
    this.exited.then((s) => (this.exitStatus = s));
  }
}

/** terminal/* on the host, keyed by terminal id. */
export class HostTerminals {
  /** @param {string} root */
  constructor(root) {
    this.root = root;
    /** @type {Map<string, HostTerminal>} */
    this.terminals = new Map();
    this.next = 0;
  }
  /** @param {string} id */
  get(id) {
    const t = this.terminals.get(id);
    if (!t) throw acp.RequestError.resourceNotFound(id);
    return t;
  }
  /** @param {acp.CreateTerminalRequest} params @returns {acp.CreateTerminalResponse} */
  create(params) {
    const id = `host-term-${++this.next}`;
    this.terminals.set(id, new HostTerminal(params, this.root));
    return { terminalId: id };
  }
  /** @param {acp.TerminalOutputRequest} params @returns {acp.TerminalOutputResponse} */
  output(params) {
    const t = this.get(params.terminalId);
    return { output: t.output.toString("utf8"), truncated: t.truncated, exitStatus: t.exitStatus };
  }
  /** @param {acp.WaitForTerminalExitRequest} params */
  waitForExit(params) {
    return this.get(params.terminalId).exited;
  }
  /** @param {acp.KillTerminalRequest} params */
  kill(params) {
    this.get(params.terminalId).child.kill("SIGKILL");
    return {};
  }
  /** @param {acp.ReleaseTerminalRequest} params */
  release(params) {
    this.get(params.terminalId).child.kill("SIGKILL");
    this.terminals.delete(params.terminalId);
    return {};
  }
  killAll() {
    for (const t of this.terminals.values()) t.child.kill("SIGKILL");
    this.terminals.clear();
  }
}
