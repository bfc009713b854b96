// SandboxesModel: what the lockroom view shows — this window's sandboxes, their state, their
// processes and their network activity — kept current from lockroom's notifications
// (sandbox/stateChanged, process/started, process/exited, network/event), never by polling.
// It also carries a window reload: `reattach()` finds this workspace's detached sandboxes (the
// ones a previous window left) and makes them this connection's again, processes included.
import type { LockroomClient } from "./client.js";
import type { ProcessHub } from "./processes.js";
import type {
  NetworkEventParams,
  ProcessInfo,
  SandboxAttachResult,
  SandboxCreateParams,
  SandboxCreateResult,
  SandboxEntry,
} from "../protocol/generated.js";
import type { Progress } from "./client.js";

export interface SandboxItem {
  entry: SandboxEntry;
  /** When `entry` was read (Date.now()): its age now is entry.ageMs + (now - listedAt). */
  listedAt: number;
  /** Processes by id, newest last; ended ones stay listed (at most kEndedKept of them). */
  processes: Map<string, ProcessInfo>;
  /** The newest network events (connection open/close and decisions), at most kNetworkKept. */
  network: NetworkEventParams[];
  /** Why it ended, when it did. */
  ended?: string;
}

const kNetworkKept = 500;
const kEndedKept = 50;
const kNotifyDelayMs = 50;

/** The label `lockroom acp` gives its sessions' sandboxes. */
export const acpSessionLabelPrefix = "acp session ";

export class SandboxesModel {
  private readonly items = new Map<string, SandboxItem>();
  private readonly listeners = new Set<() => void>();
  private readonly unsubscribe: (() => void)[] = [];
  private pending: NodeJS.Timeout | undefined;

  constructor(
    private readonly client: LockroomClient,
    private readonly hub: ProcessHub,
  ) {
    this.unsubscribe.push(
      client.on("sandbox/stateChanged", (p) => {
        const item = this.items.get(p.sandboxId);
        if (!item) return;
        item.entry = { ...item.entry, state: p.state, ...(p.reason ? { reason: p.reason } : {}) };
        if (p.state === "gone" || p.state === "failed") {
          item.ended = p.message ?? p.reason ?? p.state;
          for (const proc of item.processes.values()) proc.running = false;
        }
        this.changed();
      }),
      client.on("process/started", (p) => this.processStarted(p)),
      hub.onDidStart((p) => this.processStarted(p)),
      client.on("process/exited", (p) => {
        const proc = this.items.get(p.sandboxId)?.processes.get(p.processId);
        if (!proc) return;
        proc.running = false;
        const { processId: _p, sandboxId: _s, ...exit } = p;
        proc.exit = exit;
        this.trimEnded(this.items.get(p.sandboxId)!);
        this.changed();
      }),
      client.on("network/event", (e) => {
        const item = this.items.get(e.sandboxId);
        if (!item) return;
        item.network.push(e);
        if (item.network.length > kNetworkKept) item.network.splice(0, item.network.length - kNetworkKept);
        this.changed();
      }),
    );
  }

  list(): SandboxItem[] {
    return [...this.items.values()];
  }

  get(sandboxId: string): SandboxItem | undefined {
    return this.items.get(sandboxId);
  }

  /** Called (at most every 50 ms) after anything changed; returns the unsubscribe function. */
  onDidChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async create(params: SandboxCreateParams, onProgress?: (p: Progress) => void, signal?: AbortSignal): Promise<SandboxCreateResult> {
    const created = await this.client.request("sandbox/create", params, { ...(onProgress ? { onProgress } : {}), ...(signal ? { signal } : {}) });
    const { sandboxes } = await this.client.request("sandbox/list", {});
    const entry = sandboxes.find((s) => s.sandboxId === created.sandboxId);
    if (entry) this.add(entry);
    // A kit's services started with the sandbox, before this model knew it.
    await this.loadProcesses(created.sandboxId);
    return created;
  }

  /**
   * Attaches this workspace's detached sandboxes (those a closed or reloaded window left; not a
   * chat's, labelled `acp session …`, which its chat resumes):
   * each becomes this connection's, with its processes; output and events kept meanwhile are
   * replayed by lockroom right after each answer (the process hub holds them for their handles).
   */
  async reattach(workspace: string | undefined): Promise<SandboxAttachResult[]> {
    const { sandboxes } = await this.client.request("sandbox/list", {});
    const out: SandboxAttachResult[] = [];
    for (const s of sandboxes) {
      if (s.attached !== false || (workspace !== undefined && s.workspace !== workspace)) continue;
      // A chat's sandbox: its chat resumes it through `lockroom acp --shared` (protocol/acp.md).
      if (s.label?.startsWith(acpSessionLabelPrefix)) continue;
      const attached = await this.client.request("sandbox/attach", { sandboxId: s.sandboxId });
      this.add(attached.sandbox);
      await this.loadProcesses(s.sandboxId);
      for (const p of attached.processes) if (p.running) this.hub.adopt(s.sandboxId, p.processId);
      out.push(attached);
    }
    return out;
  }

  /** Sandboxes this connection already owns (a model made after they were). */
  async load(): Promise<void> {
    const { sandboxes } = await this.client.request("sandbox/list", {});
    for (const s of sandboxes) if (s.attached !== false) this.add(s);
    for (const s of sandboxes) if (s.attached !== false) await this.loadProcesses(s.sandboxId);
  }

  async destroy(sandboxId: string): Promise<void> {
    await this.client.request("sandbox/destroy", { sandboxId });
  }

  /** Forgets an ended sandbox (the view's "clear"). */
  forget(sandboxId: string): void {
    if (this.items.delete(sandboxId)) this.changed();
  }

  dispose(): void {
    for (const u of this.unsubscribe) u();
    if (this.pending) clearTimeout(this.pending);
    this.listeners.clear();
  }

  private processStarted(p: ProcessInfo): void {
    const item = this.items.get(p.sandboxId);
    if (!item || item.processes.has(p.processId)) return;
    item.processes.set(p.processId, p);
    this.changed();
  }

  private add(entry: SandboxEntry): void {
    const known = this.items.get(entry.sandboxId);
    if (known) {
      known.entry = entry;
      known.listedAt = Date.now();
    } else {
      this.items.set(entry.sandboxId, { entry, listedAt: Date.now(), processes: new Map(), network: [] });
    }
    this.changed();
  }

  private async loadProcesses(sandboxId: string): Promise<void> {
    const item = this.items.get(sandboxId);
    if (!item) return;
    const { processes } = await this.client.request("process/list", { sandboxId });
    for (const p of processes) item.processes.set(p.processId, p);
    this.trimEnded(item);
    this.changed();
  }

  private trimEnded(item: SandboxItem): void {
    const ended = [...item.processes.values()].filter((p) => !p.running);
    for (const p of ended.slice(0, Math.max(0, ended.length - kEndedKept))) item.processes.delete(p.processId);
  }

  private changed(): void {
    if (this.pending) return;
    this.pending = setTimeout(() => {
      this.pending = undefined;
      for (const l of this.listeners) l();
    }, kNotifyDelayMs);
  }
}
