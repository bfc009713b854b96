// One chat's agent: `lockroom acp …` spawned for an agent definition in the workspace folder, the
// ACP SDK's client app on its stdio, and one session on that folder (one process, one sandbox per
// chat). It initializes without fs or terminal capabilities (lockroom serves them in the guest;
// should such a request reach the editor anyway it is refused and recorded), forwards
// session/update to listeners, hands permission questions to the owner's handler, and offers the
// turn's requests and lockroom's `_lockroom/review|apply|discard` (protocol/acp.md). close() ends
// the session and then the process: its stdin closes, so lockroom destroys the sandbox and exits
// by itself; signals follow only if it does not. stderr lines go to a log callback; the exit
// (code, signal, last stderr lines) is an event.
// With `acpOptions: ["--shared", …]` the sandbox lives in the user's shared lockroom server:
// detach() ends the process but leaves the sandbox waiting, and a later connection with `resume`
// opens its session on that sandbox again (protocol/acp.md, "Resuming") — session/load when the
// agent can, else session/new; `sandbox` names it either way.
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import * as path from "node:path";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import type { ChangesApplyResult, ChangesDiscardResult, FileChange, Refusal } from "../../protocol/generated.js";
import { type AgentDefinition, lockroomAcpArgs } from "./agents.js";

export interface AgentConnectionOptions {
  /** The lockroom binary. */
  lockroom: string;
  agent: AgentDefinition;
  /** The workspace folder: lockroom's cwd and the session's cwd (absolute). */
  cwd: string;
  /** lockroom's environment (default: this process's). API keys for the kits' secrets come from it. */
  env?: NodeJS.ProcessEnv;
  /** Arguments before `acp` (e.g. `--log-level`, `debug`). */
  globalArgs?: string[];
  /** Options of `acp` itself, e.g. `["--shared", "--server-dir", dir]`. */
  acpOptions?: string[];
  /** Open the session on this detached sandbox (left by an earlier window's chat) instead of a new one. */
  resume?: { sandboxId: string; sessionId: string };
  clientInfo?: { name: string; version: string };
  /** Each line lockroom writes on stderr (its log and the inner agent's stderr). */
  onLog?: (line: string) => void;
  /** Aborting it while starting ends the process (SIGTERM: lockroom destroys its sandbox) and rejects start(). */
  signal?: AbortSignal;
}

/**
 * Answers a permission question: the chosen option or `{outcome: "cancelled"}`. `signal` aborts
 * when lockroom withdraws the question or the connection ends.
 */
export type PermissionHandler = (request: acp.RequestPermissionRequest, signal: AbortSignal) => Promise<acp.RequestPermissionOutcome>;

/** How the process ended. */
export interface AgentExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The last lines lockroom wrote on stderr. */
  stderrTail: string[];
  /** True when close() ended it. */
  expected: boolean;
}

/** lockroom's part of the session's answer (`_meta.lockroom`): the sandbox the session runs in. */
export interface SessionSandbox {
  sandboxId: string;
  /** Opened on an existing sandbox (resume), not a new one. */
  resumed: boolean;
  /** The sandbox lives in the shared server and outlives the process. */
  shared: boolean;
}

/** `_lockroom/review`'s result. */
export interface LockroomReview {
  sandboxId: string;
  viewId: string;
  files: (FileChange & { hostPath: string })[];
  refused: Refusal[];
}

/** A failed ACP request: the agent's JSON-RPC error, or the process gone (code undefined). */
export class AgentRequestError extends Error {
  constructor(
    message: string,
    readonly method: string,
    readonly code?: number,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = "AgentRequestError";
  }
}

const kStderrTail = 20;
const kHeldUpdates = 1000;
/**
 * The longest line accepted from lockroom. A review can hold 200 diffs of up to 1 MiB a side, and
 * its final tool_call_update repeats them; the SDK's default (32 MiB) would end the connection on
 * a large one, so this is higher. A line longer still breaks the connection, which ends the process.
 */
const kMaxMessageBytes = 256 * 1024 * 1024;

export class AgentConnection {
  /** fs/* and terminal/* requests that reached the editor and were refused (lockroom should send none). */
  readonly refusedRequests: string[] = [];
  private readonly connection: acp.ClientConnection;
  private readonly exitPromise: Promise<AgentExit>;
  private readonly stderrTail: string[] = [];
  private readonly updateListeners = new Set<(update: acp.SessionUpdate) => void>();
  private readonly exitListeners = new Set<(exit: AgentExit) => void>();
  /** Updates that arrived before session/new answered or before anyone listened (bounded). */
  private held: acp.SessionNotification[] = [];
  private permissionHandler: PermissionHandler = async () => ({ outcome: "cancelled" });
  private initializeAnswer: acp.InitializeResponse | undefined;
  private sessionAnswer: acp.NewSessionResponse | undefined;
  private lastReview: LockroomReview | undefined;
  /** The agent's latest config options: session/new's, then config_option_update's and set_config_option's. */
  private configOptions: acp.SessionConfigOption[] = [];
  private exitInfo: AgentExit | undefined;
  private closing = false;

  private constructor(
    private readonly child: ChildProcessWithoutNullStreams,
    private readonly options: AgentConnectionOptions,
  ) {
    let partial = "";
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => {
      const lines = (partial + chunk).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) this.logLine(line);
    });
    child.stdin.on("error", () => {}); // a dead process's closed pipe: the exit says why
    this.exitPromise = new Promise<AgentExit>((resolve) => {
      child.once("exit", (code, signal) => {
        if (partial) this.logLine(partial);
        this.exitInfo = { code, signal, stderrTail: [...this.stderrTail], expected: this.closing };
        resolve(this.exitInfo);
      });
    });
    const stream = acp.ndJsonStream(Writable.toWeb(child.stdin) as WritableStream<Uint8Array>, Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>, {
      maxMessageBytes: kMaxMessageBytes,
    });
    this.connection = this.app().connect(stream);
    // A connection that breaks while the process runs (a line it cannot read) cannot be resumed:
    // the process ends too, as if closed, so its sandbox does not outlive the chat.
    void this.connection.closed.then(async () => {
      await Promise.race([this.exitPromise, sleep(1000)]); // stdout ends just before a process exits
      if (!this.alive || this.closing) return;
      const reason: unknown = this.connection.signal.reason;
      this.logLine(`lockroom-vscode: the ACP connection broke (${reason instanceof Error ? reason.message : String(reason)}); ending lockroom`);
      await this.endProcess(20_000);
    });
    void this.exitPromise.then((exit) => {
      this.connection.close();
      for (const l of [...this.exitListeners]) l(exit);
      this.exitListeners.clear();
    });
  }

  /**
   * Spawns lockroom, initializes and opens the session. The first start of a kit can take
   * minutes (lockroom builds its layers and template); later ones restore a template.
   */
  static async start(options: AgentConnectionOptions): Promise<AgentConnection> {
    if (options.signal?.aborted) throw new Error("the start was cancelled");
    const argv = [...(options.globalArgs ?? []), ...lockroomAcpArgs(options.agent, options.acpOptions)];
    const child = spawn(options.lockroom, argv, { cwd: options.cwd, env: options.env ?? process.env, stdio: ["pipe", "pipe", "pipe"] });
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", (e) => reject(new Error(`cannot start ${options.lockroom}: ${e.message}`)));
    });
    const self = new AgentConnection(child, options);
    const abort = () => child.kill("SIGTERM"); // lockroom destroys its sandboxes on SIGTERM too
    options.signal?.addEventListener("abort", abort, { once: true });
    try {
      await self.open();
      return self;
    } catch (e) {
      await self.close(10_000);
      if (options.signal?.aborted) throw new Error("the start was cancelled");
      throw e;
    } finally {
      options.signal?.removeEventListener("abort", abort);
    }
  }

  /** initialize's answer: lockroom's agentInfo, the inner agent's capabilities. */
  get initializeResult(): acp.InitializeResponse {
    return this.started().initialize;
  }

  /** session/new's answer: the session id, modes and config options as the agent first gave them. */
  get session(): acp.NewSessionResponse {
    return this.started().session;
  }

  get sessionId(): string {
    return this.session.sessionId;
  }

  /** The session's sandbox as lockroom named it (undefined from a lockroom that does not say). */
  get sandbox(): SessionSandbox | undefined {
    const meta = (this.session as { _meta?: { lockroom?: Partial<SessionSandbox> } | null })._meta?.lockroom;
    if (!meta || typeof meta.sandboxId !== "string") return undefined;
    return { sandboxId: meta.sandboxId, resumed: meta.resumed === true, shared: meta.shared === true };
  }

  /** The lockroom acp process's id (its sandboxes' owner). */
  get pid(): number | undefined {
    return this.child.pid;
  }

  get alive(): boolean {
    return this.exitInfo === undefined;
  }

  /** The last lines lockroom wrote on stderr. */
  get lastLogLines(): string[] {
    return [...this.stderrTail];
  }

  /** Whether the agent offers session config options (in session/new's answer or a later update). */
  get hasConfigOptions(): boolean {
    return this.configOptions.length > 0;
  }

  /**
   * The session's updates, in arrival order; returns an unsubscribe function. Updates that came
   * before the first listener are given to it first, at once.
   */
  onUpdate(listener: (update: acp.SessionUpdate) => void): () => void {
    this.updateListeners.add(listener);
    this.flushHeld();
    return () => this.updateListeners.delete(listener);
  }

  /** Called once when the process ends (at once if it has). */
  onExit(listener: (exit: AgentExit) => void): () => void {
    if (this.exitInfo) {
      listener(this.exitInfo);
      return () => {};
    }
    this.exitListeners.add(listener);
    return () => this.exitListeners.delete(listener);
  }

  exited(): Promise<AgentExit> {
    return this.exitPromise;
  }

  /** Who answers session/request_permission (until set, every question is answered cancelled). */
  setPermissionHandler(handler: PermissionHandler): void {
    this.permissionHandler = handler;
  }

  /** One turn: text, or content blocks as they are. Resolves when the turn and its review are done. */
  prompt(content: string | acp.ContentBlock[]): Promise<acp.PromptResponse> {
    const prompt: acp.ContentBlock[] = typeof content === "string" ? [{ type: "text", text: content }] : content;
    const method = acp.methods.agent.session.prompt;
    return this.call(method, () => this.connection.agent.request(method, { sessionId: this.sessionId, prompt }));
  }

  /** session/cancel: the turn ends `cancelled` (a review waiting for the user ends, nothing applied). */
  async cancel(): Promise<void> {
    if (!this.alive) return;
    await this.connection.agent.notify(acp.methods.agent.session.cancel, { sessionId: this.sessionId }).catch(() => {});
  }

  async setMode(modeId: string): Promise<void> {
    const method = acp.methods.agent.session.setMode;
    await this.call(method, () => this.connection.agent.request(method, { sessionId: this.sessionId, modeId }));
  }

  /** session/set_config_option; the agent answers with all its options. */
  async setConfigOption(configId: string, value: string | boolean): Promise<acp.SessionConfigOption[]> {
    const method = acp.methods.agent.session.setConfigOption;
    if (!this.hasConfigOptions) throw new AgentRequestError(`${method}: this agent offers no config options`, method);
    const params: acp.SetSessionConfigOptionRequest =
      typeof value === "boolean" ? { sessionId: this.sessionId, configId, type: "boolean", value } : { sessionId: this.sessionId, configId, value };
    const result = await this.call(method, () => this.connection.agent.request(method, params));
    this.configOptions = result.configOptions;
    return result.configOptions;
  }

  /** The sandbox's changes now (`_lockroom/review`); its viewId is what apply() applies by default. */
  async review(): Promise<LockroomReview> {
    const method = "_lockroom/review";
    const review = await this.call(method, () => this.connection.agent.request<LockroomReview, { sessionId: string }>(method, { sessionId: this.sessionId }));
    this.lastReview = review;
    return review;
  }

  /**
   * Applies the changes of a review's view to the host (`_lockroom/apply`, worktree mode): all of
   * them, or `paths` (workspace-relative, or absolute under the workspace folder). `viewId`
   * defaults to the last review()'s, so exactly what it listed is applied.
   */
  async apply(paths?: string[], viewId = this.lastReview?.viewId): Promise<ChangesApplyResult> {
    const method = "_lockroom/apply";
    if (!viewId) throw new AgentRequestError(`${method}: call review() first (apply takes the view the user was shown)`, method);
    const params: { sessionId: string; viewId: string; paths?: string[] } = { sessionId: this.sessionId, viewId };
    if (paths) params.paths = paths.map((p) => this.relative(p, method));
    return this.call(method, () => this.connection.agent.request<ChangesApplyResult, typeof params>(method, params));
  }

  /** Undoes the sandbox's changes to `paths` (or all) in the guest (`_lockroom/discard`); the host is not touched. */
  async discard(paths?: string[]): Promise<ChangesDiscardResult> {
    const method = "_lockroom/discard";
    const params: { sessionId: string; paths?: string[] } = { sessionId: this.sessionId };
    if (paths) params.paths = paths.map((p) => this.relative(p, method));
    return this.call(method, () => this.connection.agent.request<ChangesDiscardResult, typeof params>(method, params));
  }

  /**
   * Ends the session (session/close when offered) and the process: its stdin closes and lockroom
   * destroys the sandbox and exits; SIGTERM after `graceMs`, SIGKILL 5 s later.
   */
  async close(graceMs = 20_000): Promise<AgentExit> {
    if (this.closing || !this.alive) return this.exitPromise;
    this.closing = true;
    if (this.sessionAnswer && this.initializeAnswer?.agentCapabilities?.sessionCapabilities?.close) {
      const method = acp.methods.agent.session.close;
      const closed = this.connection.agent.request(method, { sessionId: this.sessionId }).catch(() => {});
      await Promise.race([closed, this.exitPromise, sleep(graceMs)]);
    }
    this.connection.close();
    return this.endProcess(graceMs);
  }

  /**
   * Ends the process without ending the session: with `--shared`, lockroom ends the agent and
   * leaves the sandbox (its files and pending changes) for a later `resume`; without, it is close().
   */
  async detach(graceMs = 20_000): Promise<AgentExit> {
    if (this.closing || !this.alive) return this.exitPromise;
    this.closing = true;
    this.connection.close();
    return this.endProcess(graceMs);
  }

  /** stdin closed (lockroom then destroys its sandboxes and exits); SIGTERM after graceMs, SIGKILL 5 s later. */
  private async endProcess(graceMs: number): Promise<AgentExit> {
    this.child.stdin.end();
    const term = setTimeout(() => this.child.kill("SIGTERM"), graceMs);
    const kill = setTimeout(() => this.child.kill("SIGKILL"), graceMs + 5000);
    const exit = await this.exitPromise;
    clearTimeout(term);
    clearTimeout(kill);
    return exit;
  }

  private app(): acp.ClientApp {
    const m = acp.methods.client;
    const refuse = (method: string): never => {
      this.refusedRequests.push(method);
      throw acp.RequestError.methodNotFound(`${method}: this editor does not serve files or terminals; lockroom serves them in the sandbox`);
    };
    return acp
      .client({ name: this.options.clientInfo?.name ?? "lockroom-vscode" })
      .onNotification(m.session.update, ({ params }) => this.deliver(params))
      .onRequest(m.session.requestPermission, async ({ params, signal }) => ({ outcome: await this.permissionHandler(params, signal) }))
      .onRequest(m.fs.readTextFile, () => refuse(m.fs.readTextFile))
      .onRequest(m.fs.writeTextFile, () => refuse(m.fs.writeTextFile))
      .onRequest(m.terminal.create, () => refuse(m.terminal.create))
      .onRequest(m.terminal.output, () => refuse(m.terminal.output))
      .onRequest(m.terminal.waitForExit, () => refuse(m.terminal.waitForExit))
      .onRequest(m.terminal.kill, () => refuse(m.terminal.kill))
      .onRequest(m.terminal.release, () => refuse(m.terminal.release));
  }

  private async open(): Promise<void> {
    const untilExit = this.exitPromise.then((exit): never => {
      throw new AgentRequestError(`lockroom exited while starting the agent (${describeExit(exit)})`, "initialize");
    });
    untilExit.catch(() => {});
    const agent = this.connection.agent;
    const initializeParams: acp.InitializeRequest = {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
      clientInfo: this.options.clientInfo ?? { name: "lockroom-vscode", version: "0.1.0" },
    };
    this.initializeAnswer = await this.call("initialize", () => {
      const answer: Promise<acp.InitializeResponse> = agent.request(acp.methods.agent.initialize, initializeParams);
      return Promise.race([answer, untilExit]);
    });
    const resume = this.options.resume;
    const meta = resume ? { _meta: { lockroom: { sandboxId: resume.sandboxId } } } : {};
    if (resume && this.initializeAnswer.agentCapabilities?.loadSession) {
      const loadParams: acp.LoadSessionRequest = { sessionId: resume.sessionId, cwd: this.options.cwd, mcpServers: [], ...meta };
      const loaded = await this.call(acp.methods.agent.session.load, () => {
        const answer: Promise<acp.LoadSessionResponse> = agent.request(acp.methods.agent.session.load, loadParams);
        return Promise.race([answer, untilExit]);
      });
      this.sessionAnswer = { ...loaded, sessionId: resume.sessionId };
    } else {
      const sessionParams: acp.NewSessionRequest = { cwd: this.options.cwd, mcpServers: [], ...meta };
      this.sessionAnswer = await this.call(acp.methods.agent.session.new, () => {
        const answer: Promise<acp.NewSessionResponse> = agent.request(acp.methods.agent.session.new, sessionParams);
        return Promise.race([answer, untilExit]);
      });
    }
    this.configOptions = this.sessionAnswer.configOptions ?? [];
    this.flushHeld();
  }

  /** An update: to the listeners, or held until the session is known and someone listens. */
  private deliver(n: acp.SessionNotification): void {
    if (!this.sessionAnswer || this.updateListeners.size === 0) {
      if (this.held.length < kHeldUpdates) this.held.push(n);
      else if (this.held.length === kHeldUpdates) this.logLine(`lockroom-vscode: over ${kHeldUpdates} updates before anyone listened; later ones are dropped`);
      return;
    }
    if (n.sessionId !== this.sessionAnswer.sessionId) return;
    if (n.update.sessionUpdate === "config_option_update") this.configOptions = n.update.configOptions;
    for (const l of [...this.updateListeners]) l(n.update);
  }

  private flushHeld(): void {
    if (!this.sessionAnswer || this.updateListeners.size === 0) return;
    const held = this.held;
    this.held = [];
    for (const n of held) this.deliver(n);
  }

  private logLine(line: string): void {
    this.stderrTail.push(line);
    if (this.stderrTail.length > kStderrTail) this.stderrTail.shift();
    this.options.onLog?.(line);
  }

  private started(): { initialize: acp.InitializeResponse; session: acp.NewSessionResponse } {
    if (!this.initializeAnswer || !this.sessionAnswer) throw new Error("the agent connection is not started yet");
    return { initialize: this.initializeAnswer, session: this.sessionAnswer };
  }

  /** A request, its failure as an AgentRequestError; a connection gone names the process's exit. */
  private async call<T>(method: string, send: () => Promise<T>): Promise<T> {
    if (this.exitInfo) throw new AgentRequestError(`${method}: lockroom is gone (${describeExit(this.exitInfo)})`, method);
    try {
      return await send();
    } catch (e) {
      if (e instanceof AgentRequestError || e instanceof acp.RequestError) throw asRequestError(e, method);
      const exit = await Promise.race([this.exitPromise, sleep(2000).then(() => undefined)]);
      if (exit) throw new AgentRequestError(`${method}: lockroom exited (${describeExit(exit)})`, method);
      throw asRequestError(e, method);
    }
  }

  /** A path for `_lockroom/*`: workspace-relative as given, or made so from an absolute one under the folder. */
  private relative(p: string, method: string): string {
    if (!path.isAbsolute(p)) return p;
    const rel = path.relative(this.options.cwd, p);
    if (!rel || rel.startsWith("..") || path.isAbsolute(rel)) throw new AgentRequestError(`${method}: ${p} is not inside the workspace folder ${this.options.cwd}`, method);
    return rel;
  }
}

function asRequestError(e: unknown, method: string): AgentRequestError {
  if (e instanceof AgentRequestError) return e;
  if (e instanceof acp.RequestError) return new AgentRequestError(e.message, method, e.code, e.data);
  return new AgentRequestError(e instanceof Error ? e.message : String(e), method);
}

export function describeExit(exit: AgentExit): string {
  const how = exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`;
  const last = exit.stderrTail.filter((l) => l.trim()).at(-1);
  return last ? `${how}; it said: ${last}` : how;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}
