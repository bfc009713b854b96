// A small JSON-RPC 2.0 client for `lockroom serve --stdio` (Content-Length framing), with no npm
// packages: requests with their ids (so they can be cancelled by `$/cancelRequest`), notification
// handlers by method, and the raw child process (for its pid and exit).
import { spawn } from "node:child_process";

export class RpcError extends Error {
  constructor(error) {
    super(error.message);
    this.code = error.code;
    this.data = error.data;
  }
  get kind() {
    return this.data?.kind;
  }
}

export class LockroomConnection {
  constructor(bin, args, { env, onStderr } = {}) {
    this.child = spawn(bin, args, { env, stdio: ["pipe", "pipe", "pipe"] });
    this.pending = new Map(); // id -> {resolve, reject, method}
    this.handlers = new Map(); // method -> [fn]
    this.nextId = 1;
    this.buffer = Buffer.alloc(0);
    this.protocolErrors = []; // replies to ids we never sent, unparseable frames
    this.child.stdout.on("data", (chunk) => this.#read(chunk));
    let partial = "";
    this.child.stderr.setEncoding("utf8");
    this.child.stderr.on("data", (chunk) => {
      const lines = (partial + chunk).split("\n");
      partial = lines.pop();
      for (const line of lines) onStderr?.(line);
    });
    this.exited = new Promise((resolve) => this.child.once("exit", (code, signal) => resolve({ code, signal })));
    this.exited.then(() => {
      for (const [, p] of this.pending) p.reject(new RpcError({ code: -1, message: `lockroom exited before answering ${p.method}` }));
      this.pending.clear();
    });
  }

  get pid() {
    return this.child.pid;
  }

  #read(chunk) {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    for (;;) {
      const end = this.buffer.indexOf("\r\n\r\n");
      if (end < 0) return;
      const header = this.buffer.subarray(0, end).toString("latin1");
      const m = /content-length:\s*(\d+)/i.exec(header);
      if (!m) {
        this.protocolErrors.push(`frame without Content-Length: ${JSON.stringify(header)}`);
        this.buffer = this.buffer.subarray(end + 4);
        continue;
      }
      const len = Number(m[1]);
      if (this.buffer.length < end + 4 + len) return;
      const body = this.buffer.subarray(end + 4, end + 4 + len).toString("utf8");
      this.buffer = this.buffer.subarray(end + 4 + len);
      let msg;
      try {
        msg = JSON.parse(body);
      } catch {
        this.protocolErrors.push(`unparseable message: ${body.slice(0, 200)}`);
        continue;
      }
      this.#dispatch(msg);
    }
  }

  #dispatch(msg) {
    if (msg.id !== undefined && msg.method === undefined) {
      const p = this.pending.get(msg.id);
      if (!p) {
        this.protocolErrors.push(`a reply to id ${JSON.stringify(msg.id)}, which is not waiting for one`);
        return;
      }
      this.pending.delete(msg.id);
      if (msg.error) p.reject(new RpcError(msg.error));
      else p.resolve(msg.result);
      return;
    }
    if (msg.id !== undefined) {
      // A request from lockroom (network/approve): this client has no networking, deny.
      this.#send({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "not handled by the soak" } });
      return;
    }
    for (const fn of this.handlers.get(msg.method) ?? []) fn(msg.params);
  }

  #send(msg) {
    const body = Buffer.from(JSON.stringify(msg), "utf8");
    this.child.stdin.write(`Content-Length: ${body.length}\r\n\r\n`);
    this.child.stdin.write(body);
  }

  on(method, fn) {
    if (!this.handlers.has(method)) this.handlers.set(method, []);
    this.handlers.get(method).push(fn);
  }

  /** Sends a request; returns {id, reply} so that the caller can cancel it by id. */
  send(method, params) {
    const id = this.nextId++;
    const reply = new Promise((resolve, reject) => this.pending.set(id, { resolve, reject, method }));
    this.#send({ jsonrpc: "2.0", id, method, params });
    return { id, reply };
  }

  request(method, params) {
    return this.send(method, params).reply;
  }

  notify(method, params) {
    this.#send({ jsonrpc: "2.0", method, params });
  }

  cancel(id) {
    this.notify("$/cancelRequest", { id });
  }

  closeStdin() {
    this.child.stdin.end();
  }
}
