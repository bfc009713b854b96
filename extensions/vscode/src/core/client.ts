// LockroomClient: one connection to lockroom's editor face. It spawns `lockroom serve --stdio`
// (Content-Length JSON-RPC, LSP's lifecycle), does the initialize handshake, and offers typed
// requests and notifications from the generated protocol maps (src/protocol/generated.ts), work
// done progress by token, cancellation, the server's `network/approve` request, and an event
// when the server goes away. No vscode import: tested under plain Node against the real binary.
import { spawn, type ChildProcess } from "node:child_process";
import * as rpc from "vscode-jsonrpc/node.js";
import type {
  ClientNotifications,
  ClientRequests,
  InitializeResult,
  ProgressParams,
  ServerNotifications,
  ServerRequests,
} from "../protocol/generated.js";
import { LockroomError } from "./errors.js";

export interface ClientOptions {
  /** The lockroom binary. */
  lockroom: string;
  /** Arguments after `serve --stdio` (e.g. `--standalone`, `--server-dir DIR`). */
  serveArgs?: string[];
  /** Arguments before `serve` (e.g. `--log-level debug`). */
  globalArgs?: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  clientName?: string;
  clientVersion?: string;
  /** Whether this client answers `network/approve` (else lockroom decides by its policy alone). */
  networkApproval?: boolean;
  /** Each line lockroom writes on stderr. */
  onLog?: (line: string) => void;
}

export type Progress = ProgressParams["value"];

/** Why the connection ended: the code or signal of the process, and its last stderr lines. */
export interface ClientExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderrTail: string[];
  /** True when close() ended it. */
  expected: boolean;
}

const kStderrTail = 20;

export class LockroomClient {
  readonly initializeResult: InitializeResult;
  private readonly progress = new Map<string | number, (value: Progress) => void>();
  private readonly subscribers = new Map<string, Set<(params: unknown) => void>>();
  private readonly exitWaiters: ((exit: ClientExit) => void)[] = [];
  private exitInfo: ClientExit | undefined;
  private closing = false;
  private nextToken = 1;

  private constructor(
    private readonly child: ChildProcess,
    private readonly connection: rpc.MessageConnection,
    initializeResult: InitializeResult,
  ) {
    this.initializeResult = initializeResult;
  }

  /** Spawns lockroom, initializes, and sends `initialized`. */
  static async start(options: ClientOptions): Promise<LockroomClient> {
    const argv = [...(options.globalArgs ?? []), "serve", "--stdio", ...(options.serveArgs ?? [])];
    const child = spawn(options.lockroom, argv, { cwd: options.cwd, env: options.env ?? process.env, stdio: ["pipe", "pipe", "pipe"] });
    const stderrTail: string[] = [];
    let partial = "";
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (chunk: string) => {
      const lines = (partial + chunk).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) {
        stderrTail.push(line);
        if (stderrTail.length > kStderrTail) stderrTail.shift();
        options.onLog?.(line);
      }
    });
    const spawned = new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", (e) => reject(new LockroomError(`cannot start ${options.lockroom}: ${e.message}`, { kind: "unavailable" })));
    });
    await spawned;
    const connection = rpc.createMessageConnection(new rpc.StreamMessageReader(child.stdout!), new rpc.StreamMessageWriter(child.stdin!));
    const exited = new Promise<ClientExit>((resolve) =>
      child.once("exit", (code, signal) => resolve({ code, signal, stderrTail, expected: false })),
    );
    connection.listen();
    const initialize = connection.sendRequest("initialize", {
      processId: process.pid,
      clientInfo: { name: options.clientName ?? "lockroom-vscode", version: options.clientVersion ?? "0.1.0" },
      capabilities: {
        window: { workDoneProgress: true },
        experimental: { lockroom: { networkApproval: options.networkApproval ?? false } },
      },
    }) as Promise<InitializeResult>;
    let result: InitializeResult;
    try {
      result = await Promise.race([
        initialize,
        exited.then((e) => {
          throw new LockroomError(`lockroom exited before answering initialize (${describeExit(e)})`, { kind: "unavailable" });
        }),
      ]);
    } catch (e) {
      connection.dispose();
      child.kill("SIGKILL");
      throw LockroomError.from(e);
    }
    const client = new LockroomClient(child, connection, result);
    exited.then((e) => client.ended({ ...e, expected: client.closing }));
    client.on("$/progress", (params) => client.progress.get(params.token)?.(params.value));
    await connection.sendNotification("initialized", {});
    return client;
  }

  /** The request methods this server offers (its `initialize` answer). */
  get methods(): string[] {
    return this.initializeResult.capabilities.experimental.lockroom.methods;
  }

  /** A typed request. `onProgress` gets `$/progress` while it runs; `signal` cancels it. */
  async request<M extends keyof ClientRequests>(
    method: M,
    params: ClientRequests[M]["params"],
    options: { onProgress?: (value: Progress) => void; signal?: AbortSignal } = {},
  ): Promise<ClientRequests[M]["result"]> {
    if (this.exitInfo) throw new LockroomError(`lockroom is gone (${describeExit(this.exitInfo)})`, { kind: "unavailable" });
    let token: string | undefined;
    let sent: unknown = params;
    if (options.onProgress) {
      token = `vscode-${this.nextToken++}`;
      this.progress.set(token, options.onProgress);
      sent = { ...(params as object), workDoneToken: token };
    }
    const source = new rpc.CancellationTokenSource();
    const abort = () => source.cancel();
    options.signal?.addEventListener("abort", abort, { once: true });
    try {
      return (await this.connection.sendRequest(method, sent, source.token)) as ClientRequests[M]["result"];
    } catch (e) {
      throw LockroomError.from(e);
    } finally {
      options.signal?.removeEventListener("abort", abort);
      source.dispose();
      if (token) this.progress.delete(token);
    }
  }

  async notify<M extends keyof ClientNotifications>(method: M, params: ClientNotifications[M]): Promise<void> {
    await this.connection.sendNotification(method, params);
  }

  /**
   * Subscribes to a server notification; the returned function unsubscribes. Any number of
   * subscribers per method (vscode-jsonrpc itself keeps one handler per method: a second
   * onNotification would replace the first).
   */
  on<M extends keyof ServerNotifications>(method: M, handler: (params: ServerNotifications[M]) => void): () => void {
    let handlers = this.subscribers.get(method);
    if (!handlers) {
      const set = new Set<(params: unknown) => void>();
      handlers = set;
      this.subscribers.set(method, set);
      this.connection.onNotification(method, (params: unknown) => {
        for (const h of [...set]) h(params);
      });
    }
    const h = handler as (params: unknown) => void;
    handlers.add(h);
    return () => handlers.delete(h);
  }

  /** Answers a server request (`network/approve`). */
  handle<M extends keyof ServerRequests>(
    method: M,
    handler: (params: ServerRequests[M]["params"], signal: AbortSignal) => Promise<ServerRequests[M]["result"]>,
  ): () => void {
    const d = this.connection.onRequest(method, async (params: ServerRequests[M]["params"], token: rpc.CancellationToken) => {
      const controller = new AbortController();
      token.onCancellationRequested(() => controller.abort());
      return handler(params, controller.signal);
    });
    return () => d.dispose();
  }

  /** Resolves when the server process has ended, for whatever reason. */
  exited(): Promise<ClientExit> {
    if (this.exitInfo) return Promise.resolve(this.exitInfo);
    return new Promise((resolve) => this.exitWaiters.push(resolve));
  }

  get alive(): boolean {
    return !this.exitInfo;
  }

  /** The server's process id (the bridge's, for a shared server). */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** `shutdown` and `exit`; kills the process if it has not ended within `timeoutMs`. */
  async close(timeoutMs = 5000): Promise<ClientExit> {
    if (this.exitInfo) return this.exitInfo;
    this.closing = true;
    const timer = setTimeout(() => this.child.kill("SIGKILL"), timeoutMs);
    try {
      await Promise.race([this.connection.sendRequest("shutdown", null), this.exited()]);
      if (this.alive) await this.connection.sendNotification("exit");
    } catch {
      // the server is going away anyway
    }
    const exit = await this.exited();
    clearTimeout(timer);
    return exit;
  }

  private ended(exit: ClientExit): void {
    this.exitInfo = exit;
    this.connection.dispose();
    for (const w of this.exitWaiters.splice(0)) w(exit);
  }
}

export function describeExit(exit: ClientExit): string {
  const how = exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`;
  const last = exit.stderrTail.filter((l) => l.trim()).at(-1);
  return last ? `${how}; it said: ${last}` : how;
}
