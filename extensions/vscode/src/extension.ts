// The extension's entry: wires the features to one LockroomContext. Nothing here decides
// anything; each feature is its own file (src/ui/…), and what can be decided without VS Code
// lives in src/core (tested under plain Node against the real lockroom).
//
// lockroom is started on first use. A window that had sandboxes when it closed or reloaded
// (remembered in the workspace state) connects at once, re-attaches them and reopens their
// terminals: a reload loses nothing.
import * as vscode from "vscode";
import { registerChatView } from "./ui/chat/chatView.js";
import { registerDoctorCommand } from "./ui/commands/doctor.js";
import { registerReviewCommands } from "./ui/commands/review.js";
import { registerSandboxCommands } from "./ui/commands/sandbox.js";
import { settings } from "./ui/config.js";
import { sharedAcpOptions } from "./core/acp/agents.js";
import { LockroomContext } from "./ui/context.js";
import { HunkLens } from "./ui/hunkLens.js";
import { NetworkTree } from "./ui/networkTree.js";
import { SandboxDocuments } from "./ui/sandboxDocuments.js";
import { SandboxTree } from "./ui/sandboxTree.js";
import { ReviewScm } from "./ui/scm.js";
import { StatusBar } from "./ui/statusBar.js";
import { reopenGuestTerminals } from "./ui/terminal.js";

const kHadSandboxes = "lockroom.hadSandboxes";

let context: LockroomContext | undefined;

export function activate(extension: vscode.ExtensionContext): void {
  const ctx = new LockroomContext(extension);
  context = ctx;
  const docs = new SandboxDocuments(ctx);
  const lens = new HunkLens(ctx);
  const scm = new ReviewScm(ctx);
  const sandboxTree = new SandboxTree(ctx);
  const networkTree = new NetworkTree(ctx);
  extension.subscriptions.push(
    docs,
    lens,
    scm,
    sandboxTree,
    networkTree,
    new StatusBar(ctx),
    vscode.window.createTreeView("lockroom.sandboxes", { treeDataProvider: sandboxTree, showCollapseAll: true }),
    vscode.window.createTreeView("lockroom.network", { treeDataProvider: networkTree }),
    ...registerSandboxCommands(ctx),
    ...registerReviewCommands(ctx, scm, docs, lens),
    registerDoctorCommand(ctx),
    vscode.commands.registerCommand("lockroom.showLog", () => ctx.log.show()),
    ctx.onDidConnect((conn) => {
      const remember = () => void extension.workspaceState.update(kHadSandboxes, conn.sandboxes.list().some((s) => s.entry.state === "ready"));
      const stop = conn.sandboxes.onDidChange(remember);
      extension.subscriptions.push({ dispose: stop });
    }),
  );
  registerChatView(extension, {
    lockroomPath: () => settings().path,
    workspaceFolder: () => ctx.workspaceFolder,
    log: ctx.log,
    acpOptions: () => sharedAcpOptions(settings().serverArgs),
    prepare: async () => void (await ctx.connect()),
    chatSandbox: (sandbox) =>
      void scm.setChatSandbox(sandbox).catch((e: unknown) => ctx.log.appendLine(`chat: cannot show its sandbox in Source Control: ${e instanceof Error ? e.message : String(e)}`)),
    sandboxTouched: (sandboxId) => {
      if (ctx.current) ctx.review(sandboxId).poke();
    },
  });

  if (extension.workspaceState.get<boolean>(kHadSandboxes)) {
    void ctx.connect().then(
      (conn) => {
        const running = conn.sandboxes.list().flatMap((s) => [...s.processes.values()].filter((p) => p.running && p.pty).map((p) => ({ sandboxId: s.entry.sandboxId, processId: p.processId })));
        reopenGuestTerminals(ctx, running);
      },
      (e: unknown) => ctx.log.appendLine(`could not reconnect to this window's sandboxes: ${e instanceof Error ? e.message : String(e)}`),
    );
  }
}

export async function deactivate(): Promise<void> {
  if (!context) return;
  context.stopping = true;
  await context.dispose();
  context = undefined;
}
