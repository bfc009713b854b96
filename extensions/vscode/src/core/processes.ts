// Guest processes as objects: start one (with pipes or a pty), get its output and its exit,
// write to it, resize and signal it. A ProcessHub per connection routes `process/output` and
// `process/exited` by process id; output that arrives before `process/start` has answered (the
// notifications may overtake the reply) is held, bounded, until its handle exists.
import type { LockroomClient } from "./client.js";
import type { ProcessExitedParams, ProcessInfo, ProcessOutputParams, ProcessStartParams } from "../protocol/generated.js";

export type OutputStream = ProcessOutputParams["stream"];
export type ProcessExit = Omit<ProcessExitedParams, "processId" | "sandboxId">;

interface Held {
  output: ProcessOutputParams[];
  bytes: number;
  exit?: ProcessExitedParams;
  since: number;
}

const kHeldBytesPerProcess = 1 << 20;
const kHeldProcesses = 64;
const kHeldMs = 30_000;

export class ProcessHub {
  private readonly handles = new Map<string, GuestProcess>();
  private readonly held = new Map<string, Held>();
  private readonly startListeners = new Set<(info: ProcessInfo) => void>();
  private readonly unsubscribe: (() => void)[];

  constructor(readonly client: LockroomClient) {
    this.unsubscribe = [
      client.on("process/output", (p) => this.output(p)),
      client.on("process/exited", (p) => this.exited(p)),
    ];
  }

  /** Starts `params.argv` in the guest. */
  async start(params: ProcessStartParams): Promise<GuestProcess> {
    const startedAt = Date.now();
    const { processId } = await this.client.request("process/start", params);
    // lockroom announces only the processes an editor did not start (process/started): tell
    // the models about this one, as process/list would show it.
    const info: ProcessInfo = {
      processId,
      sandboxId: params.sandboxId,
      argv: params.argv,
      cwd: params.cwd ?? "/workspace",
      pty: Boolean(params.pty),
      origin: "client",
      startedAt,
      running: true,
    };
    for (const l of this.startListeners) l(info);
    return this.adopt(params.sandboxId, processId);
  }

  /** Called for each process this hub starts; returns the unsubscribe function. */
  onDidStart(listener: (info: ProcessInfo) => void): () => void {
    this.startListeners.add(listener);
    return () => this.startListeners.delete(listener);
  }

  /** A handle for a process this connection did not start (a kit service, one re-attached). */
  adopt(sandboxId: string, processId: string): GuestProcess {
    const existing = this.handles.get(processId);
    if (existing) return existing;
    const handle = new GuestProcess(this.client, sandboxId, processId, () => this.handles.delete(processId));
    this.handles.set(processId, handle);
    const held = this.held.get(processId);
    this.held.delete(processId);
    if (held) {
      for (const o of held.output) handle.deliver(o);
      if (held.exit) handle.finish(held.exit);
    }
    return handle;
  }

  dispose(): void {
    for (const u of this.unsubscribe) u();
  }

  private output(p: ProcessOutputParams): void {
    const handle = this.handles.get(p.processId);
    if (handle) return handle.deliver(p);
    const held = this.hold(p.processId);
    if (held.bytes + p.data.length <= kHeldBytesPerProcess) {
      held.output.push(p);
      held.bytes += p.data.length;
    }
  }

  private exited(p: ProcessExitedParams): void {
    const handle = this.handles.get(p.processId);
    if (handle) return handle.finish(p);
    this.hold(p.processId).exit = p;
  }

  private hold(processId: string): Held {
    let held = this.held.get(processId);
    if (held) return held;
    const now = Date.now();
    for (const [id, h] of this.held) if (now - h.since > kHeldMs || this.held.size >= kHeldProcesses) this.held.delete(id);
    held = { output: [], bytes: 0, since: now };
    this.held.set(processId, held);
    return held;
  }
}

/** Output kept for a handle until something listens (e.g. replayed after a re-attach, before the terminal opens). */
const kUnheardBytes = 1 << 20;

export class GuestProcess {
  private readonly outputListeners = new Set<(data: Buffer, stream: OutputStream) => void>();
  private unheard: { data: Buffer; stream: OutputStream }[] = [];
  private unheardBytes = 0;
  private readonly exitListeners = new Set<(exit: ProcessExit) => void>();
  private exitInfo: ProcessExit | undefined;

  constructor(
    private readonly client: LockroomClient,
    readonly sandboxId: string,
    readonly processId: string,
    private readonly forget: () => void,
  ) {}

  get exit(): ProcessExit | undefined {
    return this.exitInfo;
  }

  /**
   * Output as bytes; the returned function unsubscribes. The first listener also gets what
   * arrived while nobody listened (at most the newest 1 MiB).
   */
  onOutput(listener: (data: Buffer, stream: OutputStream) => void): () => void {
    this.outputListeners.add(listener);
    const unheard = this.unheard;
    this.unheard = [];
    this.unheardBytes = 0;
    for (const u of unheard) listener(u.data, u.stream);
    return () => this.outputListeners.delete(listener);
  }

  onExit(listener: (exit: ProcessExit) => void): () => void {
    if (this.exitInfo) {
      listener(this.exitInfo);
      return () => {};
    }
    this.exitListeners.add(listener);
    return () => this.exitListeners.delete(listener);
  }

  /** Resolves with the exit (immediately when it has exited). */
  exited(): Promise<ProcessExit> {
    return new Promise((resolve) => this.onExit(resolve));
  }

  /** Collects all output until the exit: stdout and stderr apart (a pty's output is `stdout`). */
  async collect(): Promise<{ stdout: string; stderr: string; exit: ProcessExit }> {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const stop = this.onOutput((data, stream) => (stream === "stderr" ? err : out).push(data));
    const exit = await this.exited();
    stop();
    return { stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8"), exit };
  }

  async write(data: string | Buffer): Promise<void> {
    const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
    await this.client.request("process/write", { processId: this.processId, data: bytes.toString("base64"), encoding: "base64" });
  }

  async closeStdin(): Promise<void> {
    await this.client.request("process/closeStdin", { processId: this.processId });
  }

  async resize(cols: number, rows: number): Promise<void> {
    await this.client.request("process/resize", { processId: this.processId, cols, rows });
  }

  async signal(signal: string): Promise<void> {
    await this.client.request("process/signal", { processId: this.processId, signal });
  }

  /** @internal the hub's delivery */
  deliver(p: ProcessOutputParams): void {
    const data = p.encoding === "base64" ? Buffer.from(p.data, "base64") : Buffer.from(p.data, "utf8");
    if (!this.outputListeners.size) {
      this.unheard.push({ data, stream: p.stream });
      this.unheardBytes += data.length;
      while (this.unheardBytes > kUnheardBytes && this.unheard.length > 1) this.unheardBytes -= this.unheard.shift()!.data.length;
      return;
    }
    for (const l of this.outputListeners) l(data, p.stream);
  }

  /** @internal */
  finish(p: ProcessExitedParams): void {
    if (this.exitInfo) return;
    const { processId: _p, sandboxId: _s, ...exit } = p;
    this.exitInfo = exit;
    this.forget();
    for (const l of this.exitListeners) l(exit);
    this.exitListeners.clear();
    this.outputListeners.clear();
  }
}
