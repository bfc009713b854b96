// @ts-check
// The editor side of one ACP connection, as a test drives it: spawns the agent's command line,
// connects the official SDK's client app (`acp.client()`, the replacement of the removed
// ClientSideConnection) over its stdio, collects every session/update in arrival order, answers
// session/request_permission from the test's policy, and serves fs/* and terminal/* on the host
// workspace in "direct" and "guest" modes (the scripted agent unwrapped). In "lockroom" mode the
// wrapper must serve those inside the guest, so any such request is refused and recorded as a
// failure (`unexpectedCalls`).
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import { HostTerminals, readTextFile, writeTextFile } from "./host_services.js";

/**
 * @typedef {{ argv: string[], cwd: string, env?: NodeJS.ProcessEnv, mode: "direct" | "guest" | "lockroom",
 *             workspace: string, trace?: boolean }} EditorOptions
 * @typedef {(req: acp.RequestPermissionRequest, editor: Editor) => acp.RequestPermissionResponse
 *             | Promise<acp.RequestPermissionResponse>} PermissionPolicy
 * @typedef {{ stopReason: acp.StopReason, updates: acp.SessionUpdate[], chunks: string[],
 *             permissions: acp.RequestPermissionRequest[] }} Turn
 */

/**
 * A permission answer choosing the option of `kind` (allow_once, reject_once…).
 * @param {acp.RequestPermissionRequest} req @param {acp.PermissionOptionKind} kind @returns {acp.RequestPermissionResponse}
 */
export function choose(req, kind) {
  const option = req.options.find((o) => o.kind === kind);
  if (!option) throw new Error(`no ${kind} option in ${JSON.stringify(req.options)}`);
  return { outcome: { outcome: "selected", optionId: option.optionId } };
}

export class Editor {
  /** @param {EditorOptions} options */
  constructor(options) {
    this.options = options;
    /** @type {acp.SessionNotification[]} every session/update, in arrival order */
    this.notifications = [];
    /** @type {acp.RequestPermissionRequest[]} */
    this.permissions = [];
    /** @type {string[]} fs/terminal requests that reached the editor in lockroom mode */
    this.unexpectedCalls = [];
    /** @type {PermissionPolicy} */
    this.policy = (req) => {
      throw new Error(`unexpected session/request_permission: ${JSON.stringify(req.toolCall)}`);
    };
    /** @type {Error[]} errors thrown by the policy (the agent sees a JSON-RPC error) */
    this.policyErrors = [];
    this.stderr = "";
    /** @type {Array<() => void>} */
    this.listeners = [];
    this.terminals = new HostTerminals(options.workspace);

    this.child = spawn(options.argv[0], options.argv.slice(1), {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.child.stderr.on("data", (d) => {
      this.stderr += d;
      if (options.trace) process.stderr.write(d);
    });
    this.child.stdin.on("error", () => {}); // a dead agent's closed pipe is reported by the test
    /** @type {Promise<{ code: number | null, signal: NodeJS.Signals | null }>} */
    this.exited = new Promise((resolve) => {
      this.child.on("exit", (code, signal) => resolve({ code, signal }));
      this.child.on("error", (e) => { // could not be started (ENOENT, EACCES): the test fails on it
        this.stderr += `driver: cannot run ${options.argv[0]}: ${e.message}\n`;
        resolve({ code: null, signal: null });
      });
    });

    const stream = acp.ndJsonStream(
      /** @type {WritableStream<Uint8Array>} */ (Writable.toWeb(this.child.stdin)),
      /** @type {ReadableStream<Uint8Array>} */ (Readable.toWeb(this.child.stdout)),
    );
    this.connection = this.app().connect(options.trace ? traced(stream) : stream);
    this.agent = this.connection.agent;
  }

  /** @returns {acp.ClientApp} */
  app() {
    const direct = this.options.mode !== "lockroom";
    const root = this.options.workspace;
    /** @template T @param {string} method @param {() => T} serve */
    const host = (method, serve) => {
      if (direct) return serve();
      this.unexpectedCalls.push(method);
      throw acp.RequestError.methodNotFound(`${method} (the lockroom wrapper must serve it in the guest)`);
    };
    const m = acp.methods.client;
    return acp
      .client({ name: "lockroom-acp-test-driver" })
      .onNotification(m.session.update, ({ params }) => {
        this.notifications.push(params);
        for (const wake of this.listeners.splice(0)) wake();
      })
      .onRequest(m.session.requestPermission, async ({ params }) => {
        this.permissions.push(params);
        for (const wake of this.listeners.splice(0)) wake();
        try {
          return await this.policy(params, this);
        } catch (e) {
          this.policyErrors.push(/** @type {Error} */ (e));
          throw e;
        }
      })
      .onRequest(m.fs.readTextFile, ({ params }) => host(m.fs.readTextFile, () => readTextFile(root, params)))
      .onRequest(m.fs.writeTextFile, ({ params }) => host(m.fs.writeTextFile, () => writeTextFile(root, params)))
      .onRequest(m.terminal.create, ({ params }) => host(m.terminal.create, () => this.terminals.create(params)))
      .onRequest(m.terminal.output, ({ params }) => host(m.terminal.output, () => this.terminals.output(params)))
      .onRequest(m.terminal.waitForExit, ({ params }) => host(m.terminal.waitForExit, () => this.terminals.waitForExit(params)))
      .onRequest(m.terminal.kill, ({ params }) => host(m.terminal.kill, () => this.terminals.kill(params)))
      .onRequest(m.terminal.release, ({ params }) => host(m.terminal.release, () => this.terminals.release(params)));
  }

  /** initialize, advertising fs and terminal (so a wrapper that forwarded them would be caught). */
  initialize() {
    return this.agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
      clientInfo: { name: "lockroom-acp-test-driver", version: "1.0.0" },
    });
  }

  /** @param {string} cwd */
  newSession(cwd) {
    return this.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
  }

  /**
   * One prompt turn whose text is the scripted agent's JSON script. Resolves with the turn's
   * stop reason and the updates and permission requests that arrived during it.
   * @param {string} sessionId @param {unknown[]} steps @returns {Promise<Turn>}
   */
  async prompt(sessionId, steps) {
    const firstUpdate = this.notifications.length;
    const firstPermission = this.permissions.length;
    const response = await this.agent.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: JSON.stringify(steps) }],
    });
    await new Promise((r) => setImmediate(r)); // let notifications read before the reply settle
    const updates = this.notifications.slice(firstUpdate).filter((n) => n.sessionId === sessionId).map((n) => n.update);
    return {
      stopReason: response.stopReason,
      updates,
      chunks: textChunks(updates, "agent_message_chunk"),
      permissions: this.permissions.slice(firstPermission),
    };
  }

  /** @param {string} sessionId */
  cancel(sessionId) {
    return this.agent.notify(acp.methods.agent.session.cancel, { sessionId });
  }

  /** Waits until `test()` holds, re-checked on each update or permission request. @param {() => boolean} test @param {number} ms @param {string} what */
  async until(test, ms, what) {
    const deadline = Date.now() + ms;
    while (!test()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 200));
        this.listeners.push(() => {
          clearTimeout(timer);
          resolve(undefined);
        });
      });
    }
  }

  /** Closes the connection and the agent's stdin, then kills it if it has not exited in `graceMs`. */
  async close(graceMs = 5000) {
    this.connection.close();
    this.child.stdin.end();
    this.terminals.killAll();
    const timer = setTimeout(() => this.child.kill("SIGKILL"), graceMs);
    const status = await this.exited;
    clearTimeout(timer);
    return status;
  }
}

/** The texts of one kind of content chunk, in order. @param {acp.SessionUpdate[]} updates @param {string} kind */
export function textChunks(updates, kind) {
  const out = [];
  for (const u of updates)
    if (u.sessionUpdate === kind && "content" in u && u.content && !Array.isArray(u.content) && u.content.type === "text")
      out.push(u.content.text);
  return out;
}

/** Prints each message on stderr as it passes (--trace). @param {acp.Stream} stream @returns {acp.Stream} */
function traced(stream) {
  /** @param {string} arrow */
  const tap = (arrow) =>
    new TransformStream({
      transform(message, controller) {
        process.stderr.write(`${arrow} ${JSON.stringify(message)}\n`);
        controller.enqueue(message);
      },
    });
  const outgoing = tap("-->");
  outgoing.readable.pipeTo(stream.writable).catch(() => {});
  return { writable: outgoing.writable, readable: stream.readable.pipeThrough(tap("<--")) };
}
