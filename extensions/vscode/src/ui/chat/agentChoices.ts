// The agents the chat offers: the built-ins and the `lockroom.agents` setting's entries
// (agents.ts checks them), read again when the setting changes. Problems with entries are shown
// once each as a warning with "Open Settings"; the entries with problems are not offered.
import * as vscode from "vscode";
import { agentsFromSettings, type AgentDefinition } from "../../core/acp/agents.js";
import type { AgentChoice } from "../../webview/chat/protocol.js";

export class AgentChoices implements vscode.Disposable {
  private agents: AgentDefinition[] = [];
  private readonly warned = new Set<string>();
  private readonly changed = new vscode.EventEmitter<void>();
  private readonly listener: vscode.Disposable;
  /** Fired after the list changed with the setting. */
  readonly onDidChange = this.changed.event;

  constructor(private readonly log: vscode.OutputChannel) {
    this.read();
    this.listener = vscode.workspace.onDidChangeConfiguration((e) => {
      if (!e.affectsConfiguration("lockroom.agents")) return;
      this.read();
      this.changed.fire();
    });
  }

  get definitions(): readonly AgentDefinition[] {
    return this.agents;
  }

  find(name: string): AgentDefinition | undefined {
    return this.agents.find((a) => a.name === name);
  }

  choices(): AgentChoice[] {
    return this.agents.map((a) => ({ name: a.name, detail: describe(a) }));
  }

  dispose(): void {
    this.listener.dispose();
    this.changed.dispose();
  }

  private read(): void {
    const value = vscode.workspace.getConfiguration("lockroom").get<unknown>("agents");
    const { agents, problems } = agentsFromSettings(value);
    this.agents = agents;
    const fresh = problems.map((p) => p.message).filter((m) => !this.warned.has(m));
    if (!fresh.length) return;
    for (const m of fresh) {
      this.warned.add(m);
      this.log.appendLine(`chat: ${m}`);
    }
    void vscode.window.showWarningMessage(fresh.join(" "), "Open Settings").then((choice) => {
      if (choice) void vscode.commands.executeCommand("workbench.action.openSettings", "lockroom.agents");
    });
  }
}

/** "kits: claude · claude-agent-acp" */
function describe(a: AgentDefinition): string {
  const parts = [];
  if (a.kits.length) parts.push(`${a.kits.length > 1 ? "kits" : "kit"} ${a.kits.join(", ")}`);
  parts.push(a.argv.join(" "));
  if (a.noNetwork) parts.push("no network");
  return parts.join(" · ");
}
