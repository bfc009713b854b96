// Sandbox commands: New Sandbox for Workspace (kits and resources as quick picks, the create's
// progress — image builds and first boots take a while — in a cancellable notification),
// Destroy Sandbox, Open Terminal in Sandbox, Run Agent in Terminal, Show Audit Log.
import * as vscode from "vscode";
import { agentsFromSettings, builtInAgents, type AgentDefinition } from "../../core/acp/agents.js";
import { LockroomError } from "../../core/errors.js";
import { createParams, settings } from "../config.js";
import type { LockroomContext } from "../context.js";
import { openGuestTerminal } from "../terminal.js";

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** A sandbox id from a tree item, an id string, or the user's pick among the ready ones. */
async function sandboxOf(ctx: LockroomContext, arg: unknown): Promise<string | undefined> {
  const conn = await ctx.connect();
  if (typeof arg === "string") return arg;
  const fromItem = (arg as { item?: { entry?: { sandboxId?: string } } } | undefined)?.item?.entry?.sandboxId;
  if (fromItem) return fromItem;
  const ready = conn.sandboxes.list().filter((s) => s.entry.state === "ready");
  if (ready.length === 1) return ready[0]!.entry.sandboxId;
  if (!ready.length) {
    const make = await vscode.window.showInformationMessage("No sandbox is running for this window.", "New Sandbox");
    return make ? createSandbox(ctx, []) : undefined;
  }
  const pick = await vscode.window.showQuickPick(ready.map((s) => ({ label: s.entry.label || s.entry.sandboxId, description: s.entry.sandboxId, id: s.entry.sandboxId })), { placeHolder: "Which sandbox?" });
  return pick?.id;
}

export interface Size {
  cpus: number;
  memoryMiB: number;
}

/** The sizes offered at create: the settings' default first, then common ones. */
export function sizeChoices(defaults: Size): { label: string; description: string; size: Size }[] {
  const sizes: Size[] = [defaults, { cpus: 1, memoryMiB: 512 }, { cpus: 2, memoryMiB: 2048 }, { cpus: 4, memoryMiB: 4096 }, { cpus: 4, memoryMiB: 8192 }];
  const seen = new Set<string>();
  return sizes
    .filter((s) => !seen.has(`${s.cpus}/${s.memoryMiB}`) && seen.add(`${s.cpus}/${s.memoryMiB}`))
    .map((size, i) => ({
      label: `${size.cpus} CPU${size.cpus > 1 ? "s" : ""}, ${size.memoryMiB >= 1024 ? `${size.memoryMiB / 1024} GiB` : `${size.memoryMiB} MiB`}`,
      description: i === 0 ? "from the lockroom.resources settings" : "",
      size,
    }));
}

/** Makes a sandbox on the workspace with `kits`, showing its progress; the id, or undefined when cancelled or failed (said). */
export async function createSandbox(ctx: LockroomContext, kits: string[], size?: Size): Promise<string | undefined> {
  const conn = await ctx.connect();
  const workspace = ctx.workspaceFolder;
  return vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: "lockroom", cancellable: true },
    async (progress, token) => {
      progress.report({ message: `making a sandbox${workspace ? " for " + workspace.split("/").at(-1) : ""}${kits.length ? " with " + kits.join(", ") : ""}…` });
      const abort = new AbortController();
      token.onCancellationRequested(() => abort.abort());
      let last = 0;
      try {
        const params = createParams(workspace, kits);
        if (size) params.resources = { ...params.resources, cpus: size.cpus, memoryMiB: size.memoryMiB };
        const created = await conn.sandboxes.create(params, (p) => {
          if (p.kind === "end") return;
          const pct = p.percentage ?? last;
          const title = p.kind === "begin" ? p.title : undefined;
          progress.report({ message: [title, p.message].filter(Boolean).join(": "), increment: Math.max(0, pct - last) });
          last = pct;
        }, abort.signal);
        const slow = created.accel === "tcg" ? " (TCG: no KVM on this machine, so it is slow)" : "";
        void vscode.window.setStatusBarMessage(`lockroom: ${created.sandboxId} ready in ${(created.timings.totalMs / 1000).toFixed(1)} s${slow}`, 8000);
        return created.sandboxId;
      } catch (e) {
        if (e instanceof LockroomError && e.kind === "cancelled") return undefined;
        const fix = e instanceof LockroomError && e.kind === "unavailable" ? " Run \"lockroom: Check This Machine\" to see what is missing." : "";
        void vscode.window.showErrorMessage(`lockroom: the sandbox was not made: ${errorText(e)}${fix}`, "Show Log").then((c) => c && ctx.log.show());
        return undefined;
      }
    },
  );
}

async function pickKits(ctx: LockroomContext): Promise<string[] | undefined> {
  const conn = await ctx.connect();
  const defaults = new Set(settings().kits);
  let kits: { name: string; description?: string }[] = [];
  try {
    const listed = await conn.client.request("kit/list", {});
    kits = listed.kits.map((k) => ({ name: k.name, ...(k.description ? { description: k.description } : {}) }));
  } catch (e) {
    ctx.log.appendLine(`kit/list: ${errorText(e)}`);
  }
  if (!kits.length) return [...defaults];
  const picks = await vscode.window.showQuickPick(
    kits.map((k) => ({ label: k.name, description: k.description ?? "", picked: defaults.has(k.name) })),
    { canPickMany: true, placeHolder: "Kits for the sandbox (none: the plain image). Defaults come from the lockroom.kits setting." },
  );
  return picks?.map((p) => p.label);
}

export function registerSandboxCommands(ctx: LockroomContext): vscode.Disposable[] {
  return [
    vscode.commands.registerCommand("lockroom.newSandbox", async () => {
      const kits = await pickKits(ctx).catch((e: unknown) => void vscode.window.showErrorMessage(`lockroom: ${errorText(e)}`));
      if (!kits) return;
      const s = settings();
      const size = await vscode.window.showQuickPick(sizeChoices({ cpus: s.cpus, memoryMiB: s.memoryMiB }), {
        placeHolder: "Size of the sandbox (the guest's vCPUs and memory; a kit may ask for more memory)",
      });
      if (size) await createSandbox(ctx, kits, size.size);
    }),
    vscode.commands.registerCommand("lockroom.destroySandbox", async (arg?: unknown) => {
      const id = await sandboxOf(ctx, arg);
      if (!id) return;
      const review = ctx.current ? ctx.review(id).view : undefined;
      const pending = review?.files.length ? ` It holds ${review.files.length} changed file(s) not applied; they are lost.` : "";
      const ok = await vscode.window.showWarningMessage(`Destroy sandbox ${id}?${pending}`, { modal: true }, "Destroy");
      if (ok !== "Destroy") return;
      try {
        await ctx.current?.sandboxes.destroy(id);
      } catch (e) {
        void vscode.window.showErrorMessage(`lockroom: ${errorText(e)}`);
      }
    }),
    vscode.commands.registerCommand("lockroom.openTerminal", async (arg?: unknown) => {
      const id = await sandboxOf(ctx, arg);
      if (id) openGuestTerminal(ctx, id, ["sh", "-c", "command -v bash >/dev/null && exec bash -l || exec sh -l"], `lockroom ${id}`);
    }),
    vscode.commands.registerCommand("lockroom.runAgentInTerminal", async () => {
      const { agents, problems } = agentsFromSettings(vscode.workspace.getConfiguration("lockroom").get("agents"));
      for (const p of problems) ctx.log.appendLine(p.message);
      const terminalAgents = agents.filter((a) => a.terminalArgv || !builtInAgents.some((b) => b.name === a.name));
      const picks: { label: string; description: string; agent?: AgentDefinition }[] = [
        ...terminalAgents.map((agent) => ({ label: agent.name, description: (agent.terminalArgv ?? agent.argv).join(" ") + (agent.kits.length ? ` · kits: ${agent.kits.join(", ")}` : ""), agent })),
        { label: "A shell", description: "bash or sh in a new sandbox: run any CLI agent yourself" },
      ];
      const pick = await vscode.window.showQuickPick(picks, { placeHolder: "Which agent? (lockroom.agents in the settings adds yours; terminalArgv is its command here)" });
      if (!pick) return;
      const kits = pick.agent ? pick.agent.kits : settings().kits;
      const id = await createSandbox(ctx, kits);
      if (!id) return;
      const argv = pick.agent ? pick.agent.terminalArgv ?? pick.agent.argv : ["sh", "-c", "command -v bash >/dev/null && exec bash -l || exec sh -l"];
      openGuestTerminal(ctx, id, argv, `${pick.agent?.name ?? "shell"} (lockroom ${id})`);
    }),
    vscode.commands.registerCommand("lockroom.showAuditLog", async (arg?: unknown) => {
      const id = await sandboxOf(ctx, arg);
      const log = id ? ctx.current?.sandboxes.get(id)?.entry.auditLog : undefined;
      if (!log) return void vscode.window.showInformationMessage(`lockroom: ${id ?? "this sandbox"} has no audit log (no network).`);
      await vscode.window.showTextDocument(vscode.Uri.file(log), { preview: true });
    }),
  ];
}
