// The Network view: what the sandboxes tried to reach, newest first — decision (allowed, denied,
// blocked; asked and how it was answered), host, port, scheme, method and path, bytes, and the
// rule or reason. Filterable by decision (lockroom.filterNetwork). Progress records of long
// connections are folded into their connection (the newest record of each connection is shown).
import * as vscode from "vscode";
import type { NetworkEventParams } from "../protocol/generated.js";
import type { LockroomContext } from "./context.js";

export type NetworkFilter = "all" | "allow" | "deny" | "block" | "asked";

const kShown = 300;

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

export function describeEvent(e: NetworkEventParams): { label: string; description: string; tooltip: string } {
  const target = `${e.host}:${e.port}`;
  const label = e.method && e.method !== "CONNECT" && e.path ? `${e.method} ${target}${e.path}` : `${e.scheme} ${target}`;
  const decision = e.decision === "allow" ? "allowed" : e.decision === "deny" ? "denied" : "blocked";
  const asked = e.approval && e.approval !== "notAsked" ? ` (asked: ${e.approval})` : "";
  const traffic = e.bytesUp || e.bytesDown ? ` · ↑${bytes(e.bytesUp)} ↓${bytes(e.bytesDown)}` : "";
  const description = `${decision}${asked}${traffic} · ${e.rule}`;
  const tooltip = [`${label}`, `${decision} by ${e.rule}${e.reason ? `: ${e.reason}` : ""}`, e.process ? `by ${e.process.command} (pid ${e.process.pid})` : "",
    e.secrets?.length ? `secrets injected: ${e.secrets.join(", ")}` : "", `${e.time} · ${e.durationMs} ms · ${e.sandbox ?? e.sandboxId}`].filter(Boolean).join("\n");
  return { label, description, tooltip };
}

export function matches(e: NetworkEventParams, filter: NetworkFilter): boolean {
  if (filter === "all") return true;
  if (filter === "asked") return Boolean(e.approval && e.approval !== "notAsked");
  return e.decision === filter;
}

/** The newest record of each connection (or each request), newest first. */
export function latestRecords(events: NetworkEventParams[]): NetworkEventParams[] {
  const seen = new Set<string>();
  const out: NetworkEventParams[] = [];
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i]!;
    const key = e.connectionId !== undefined ? `${e.sandboxId}/${e.connectionId}/${e.request ?? 0}` : `${e.sandboxId}/#${i}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(e);
  }
  return out;
}

export class NetworkTree implements vscode.TreeDataProvider<NetworkEventParams>, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<undefined>();
  readonly onDidChangeTreeData = this.emitter.event;
  private filter: NetworkFilter = "all";
  private readonly subscriptions: vscode.Disposable[] = [];
  private unsubscribeModel: (() => void) | undefined;

  constructor(private readonly ctx: LockroomContext) {
    this.subscriptions.push(
      ctx.onDidConnect((conn) => {
        this.unsubscribeModel?.();
        this.unsubscribeModel = conn.sandboxes.onDidChange(() => this.emitter.fire(undefined));
        this.emitter.fire(undefined);
      }),
      vscode.commands.registerCommand("lockroom.filterNetwork", async () => {
        const picks: { label: string; filter: NetworkFilter }[] = [
          { label: "All", filter: "all" }, { label: "Allowed", filter: "allow" }, { label: "Denied", filter: "deny" },
          { label: "Blocked", filter: "block" }, { label: "Asked", filter: "asked" },
        ];
        const pick = await vscode.window.showQuickPick(picks, { placeHolder: `Show network activity (now: ${this.filter})` });
        if (pick) {
          this.filter = pick.filter;
          this.emitter.fire(undefined);
        }
      }),
    );
  }

  getChildren(node?: NetworkEventParams): NetworkEventParams[] {
    if (node) return [];
    const all = (this.ctx.current?.sandboxes.list() ?? []).flatMap((s) => s.network);
    all.sort((a, b) => a.time.localeCompare(b.time));
    return latestRecords(all).filter((e) => matches(e, this.filter)).slice(0, kShown);
  }

  getTreeItem(e: NetworkEventParams): vscode.TreeItem {
    const d = describeEvent(e);
    const t = new vscode.TreeItem(d.label, vscode.TreeItemCollapsibleState.None);
    t.description = d.description;
    t.tooltip = d.tooltip;
    t.iconPath = new vscode.ThemeIcon(e.decision === "allow" ? "pass" : e.decision === "deny" ? "circle-slash" : "shield");
    return t;
  }

  dispose(): void {
    this.unsubscribeModel?.();
    for (const s of this.subscriptions) s.dispose();
    this.emitter.dispose();
  }
}
