// The Sandboxes view: this window's sandboxes (state, accelerator, limits, age) and under each
// its processes (running first, then those that ended with their exit). A rendering of
// SandboxesModel; refreshed when the model says it changed, and once a second while any
// sandbox is listed (for the ages: entry.ageMs plus the time since it was read).
import * as vscode from "vscode";
import type { SandboxItem } from "../core/sandboxes.js";
import type { ProcessInfo } from "../protocol/generated.js";
import type { LockroomContext } from "./context.js";

type Node = { kind: "sandbox"; item: SandboxItem } | { kind: "process"; sandboxId: string; process: ProcessInfo };

export function age(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

export function sandboxDescription(item: SandboxItem, now = Date.now()): string {
  const e = item.entry;
  const parts = [e.state, e.accel === "kvm" ? "KVM" : "TCG (slow: no KVM)", `${e.limits.cpus} CPU, ${e.limits.memoryMiB} MiB`, age(e.ageMs + (now - item.listedAt))];
  if (e.kits.length) parts.push(`kits: ${e.kits.join(", ")}`);
  return parts.join(" · ");
}

export function processLabel(p: ProcessInfo): { label: string; description: string } {
  const label = p.name ? `${p.name} (service)` : p.argv.join(" ");
  const state = p.running ? "running" : p.exit?.signal ? `ended by ${p.exit.signal}` : `exit ${p.exit?.exitCode ?? "?"}`;
  return { label, description: `${state}${p.pty ? " · terminal" : ""} · ${p.processId}` };
}

export class SandboxTree implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;
  private readonly subscriptions: vscode.Disposable[] = [];
  private unsubscribeModel: (() => void) | undefined;
  private readonly ticker: NodeJS.Timeout;

  constructor(private readonly ctx: LockroomContext) {
    this.subscriptions.push(
      ctx.onDidConnect((conn) => {
        this.unsubscribeModel?.();
        this.unsubscribeModel = conn.sandboxes.onDidChange(() => this.refresh());
        this.refresh();
      }),
      ctx.onDidDisconnect(() => this.refresh()),
    );
    this.ticker = setInterval(() => {
      if (ctx.current?.sandboxes.list().length) this.emitter.fire(undefined);
    }, 1000);
  }

  refresh(): void {
    this.emitter.fire(undefined);
  }

  getChildren(node?: Node): Node[] {
    const model = this.ctx.current?.sandboxes;
    if (!model) return [];
    if (!node) return model.list().map((item) => ({ kind: "sandbox", item }));
    if (node.kind !== "sandbox") return [];
    const procs = [...node.item.processes.values()].sort((a, b) => Number(b.running) - Number(a.running) || b.startedAt - a.startedAt);
    return procs.map((process) => ({ kind: "process", sandboxId: node.item.entry.sandboxId, process }));
  }

  getTreeItem(node: Node): vscode.TreeItem {
    if (node.kind === "sandbox") {
      const e = node.item.entry;
      const t = new vscode.TreeItem(e.label || e.sandboxId, node.item.processes.size ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None);
      t.id = e.sandboxId;
      t.description = sandboxDescription(node.item);
      t.tooltip = new vscode.MarkdownString(
        [`**${e.sandboxId}** — ${e.state}${node.item.ended ? `: ${node.item.ended}` : ""}`, e.workspace ? `workspace: \`${e.workspace}\`` : "no workspace",
          `limits: ${e.limits.cpus} CPU, ${e.limits.memoryMiB} MiB RAM, ${e.limits.diskMiB} MiB disk, ${e.limits.timeoutSeconds} s, ${e.limits.maxProcesses} processes`,
          e.accel === "tcg" ? "Running under TCG (software emulation): this machine offers no usable KVM, so the guest is slow. `lockroom doctor` says why." : "Running with KVM."].join("\n\n"),
      );
      t.contextValue = `sandbox.${e.state}`;
      t.iconPath = new vscode.ThemeIcon(e.state === "ready" ? "vm-running" : e.state === "failed" ? "error" : e.state === "gone" ? "vm-outline" : "loading~spin");
      return t;
    }
    const { label, description } = processLabel(node.process);
    const t = new vscode.TreeItem(label, vscode.TreeItemCollapsibleState.None);
    t.id = node.process.processId;
    t.description = description;
    t.tooltip = `${node.process.argv.join(" ")}\ncwd ${node.process.cwd}\nstarted ${new Date(node.process.startedAt).toLocaleTimeString()} (${node.process.origin})`;
    t.contextValue = node.process.running ? "process.running" : "process.ended";
    t.iconPath = new vscode.ThemeIcon(node.process.running ? (node.process.pty ? "terminal" : "play") : "circle-outline");
    return t;
  }

  dispose(): void {
    clearInterval(this.ticker);
    this.unsubscribeModel?.();
    for (const s of this.subscriptions) s.dispose();
    this.emitter.dispose();
  }
}
