// Review in the Source Control view: one source control per sandbox with a workspace, listing
// the files the agent changed with git's status letters; a click opens VS Code's diff editor
// between the review's base and the sandbox's version (lockroom-sandbox: documents of the view
// the list came from). Files that met a conflict when applied get a group of their own; a
// click there opens the merge editor. The lists follow the review model, which follows
// lockroom's `changes/changed` notifications: nothing polls. The chat's sandbox belongs to its
// `lockroom acp` connection, not this window's, so it is added by the chat (setChatSandbox) and
// refreshed when the chat's agent finishes a tool call or a turn.
import * as path from "node:path";
import * as vscode from "vscode";
import type { ApplyOutcome, ReviewView } from "../core/review.js";
import type { FileChange } from "../protocol/generated.js";
import type { LockroomContext } from "./context.js";
import { sandboxUri } from "./sandboxDocuments.js";

const letters: Record<FileChange["status"], string> = { added: "A", modified: "M", deleted: "D", renamed: "R", typechange: "T" };
const colours: Record<FileChange["status"], string> = {
  added: "gitDecoration.addedResourceForeground",
  modified: "gitDecoration.modifiedResourceForeground",
  deleted: "gitDecoration.deletedResourceForeground",
  renamed: "gitDecoration.renamedResourceForeground",
  typechange: "gitDecoration.modifiedResourceForeground",
};

/** A resource state that remembers which sandbox, view and change it shows. */
export interface ChangeState extends vscode.SourceControlResourceState {
  sandboxId: string;
  viewId: string;
  change: FileChange;
}

export interface ConflictState extends vscode.SourceControlResourceState {
  sandboxId: string;
  viewId: string;
  path: string;
}

class SandboxScm implements vscode.Disposable {
  readonly control: vscode.SourceControl;
  private readonly changes: vscode.SourceControlResourceGroup;
  private readonly conflicts: vscode.SourceControlResourceGroup;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly ctx: LockroomContext,
    readonly sandboxId: string,
    label: string,
    readonly root: vscode.Uri,
  ) {
    this.control = vscode.scm.createSourceControl("lockroom", `lockroom: ${label}`, root);
    this.control.inputBox.visible = false;
    this.control.acceptInputCommand = { command: "lockroom.applyAll", title: "Apply All", arguments: [sandboxId] };
    this.changes = this.control.createResourceGroup("changes", "Changes in the sandbox");
    this.changes.hideWhenEmpty = false;
    this.conflicts = this.control.createResourceGroup("conflicts", "Conflicts with your edits");
    this.conflicts.hideWhenEmpty = true;
    const review = ctx.review(sandboxId);
    this.unsubscribe = review.onDidChange((view) => this.show(view));
    if (review.view) this.show(review.view);
    else void review.refresh().catch((e: unknown) => ctx.log.appendLine(`review of ${sandboxId}: ${e instanceof Error ? e.message : String(e)}`));
  }

  show(view: ReviewView): void {
    this.changes.resourceStates = view.files.map((change) => this.state(view.viewId, change));
    this.control.count = view.files.length;
    this.changes.label = view.refused.length ? `Changes in the sandbox (${view.refused.length} refused: see the log)` : "Changes in the sandbox";
    for (const r of view.refused) this.ctx.log.appendLine(`${this.sandboxId}: refused ${r.path}: ${r.reason}`);
    // A conflict whose file is no longer changed (applied or discarded since) is resolved.
    const still = new Set(view.files.map((f) => f.path));
    this.conflicts.resourceStates = this.conflicts.resourceStates.filter((c) => still.has((c as ConflictState).path));
  }

  showConflicts(viewId: string, outcome: ApplyOutcome): void {
    const known = new Map(this.conflicts.resourceStates.map((c) => [(c as ConflictState).path, c]));
    for (const c of outcome.conflicts) {
      const state: ConflictState = {
        sandboxId: this.sandboxId,
        viewId,
        path: c.path,
        resourceUri: vscode.Uri.joinPath(this.root, c.path),
        decorations: { tooltip: "Both you and the agent changed this file; nothing was written to it", iconPath: new vscode.ThemeIcon("warning") },
        command: { command: "lockroom.resolveConflict", title: "Resolve in the Merge Editor", arguments: [this.sandboxId, viewId, c.path] },
      };
      known.set(c.path, state);
    }
    this.conflicts.resourceStates = [...known.values()];
  }

  private state(viewId: string, change: FileChange): ChangeState {
    const resourceUri = vscode.Uri.joinPath(this.root, change.path);
    const left = sandboxUri({ sandboxId: this.sandboxId, viewId, path: change.oldPath ?? change.path, side: "base" });
    const right = sandboxUri({ sandboxId: this.sandboxId, viewId, path: change.path, side: "current" });
    const name = path.basename(change.path);
    const what = change.binary ? "binary" : `+${change.added} −${change.removed}`;
    return {
      sandboxId: this.sandboxId,
      viewId,
      change,
      resourceUri,
      decorations: {
        strikeThrough: change.status === "deleted",
        tooltip: `${change.status}${change.oldPath ? ` from ${change.oldPath}` : ""} · ${what} · in the sandbox only until you apply it`,
        // Status letters come from a FileDecorationProvider (below); the colour from git's theme keys.
      },
      command: { command: "vscode.diff", title: "Open Changes", arguments: [left, right, `${name} (base ↔ sandbox ${this.sandboxId})`, { preview: true }] },
    };
  }

  dispose(): void {
    this.unsubscribe();
    this.control.dispose();
  }
}

/** All sandboxes' source controls, made and removed as sandboxes come and go; also the status letters. */
export class ReviewScm implements vscode.Disposable, vscode.FileDecorationProvider {
  private readonly controls = new Map<string, SandboxScm>();
  private readonly subscriptions: vscode.Disposable[] = [];
  private readonly decorationEmitter = new vscode.EventEmitter<vscode.Uri[]>();
  readonly onDidChangeFileDecorations = this.decorationEmitter.event;
  private unsubscribeModel: (() => void) | undefined;
  private chat: { sandboxId: string; label: string; workspace: string } | undefined;

  constructor(private readonly ctx: LockroomContext) {
    this.subscriptions.push(
      ctx.onDidConnect((conn) => {
        this.unsubscribeModel?.();
        this.unsubscribeModel = conn.sandboxes.onDidChange(() => this.sync());
        this.sync();
      }),
      ctx.onDidDisconnect(() => this.clear()),
      vscode.window.registerFileDecorationProvider(this),
    );
  }

  get(sandboxId: string): SandboxScm | undefined {
    return this.controls.get(sandboxId);
  }

  /** The sandbox a command is about: the one given, the only one, or the user's pick. */
  async pick(sandboxId?: string): Promise<string | undefined> {
    if (sandboxId) return sandboxId;
    const ids = [...this.controls.keys()];
    if (ids.length <= 1) return ids[0];
    const pick = await vscode.window.showQuickPick(ids.map((id) => ({ label: this.controls.get(id)!.control.label, id })), { placeHolder: "Which sandbox?" });
    return pick?.id;
  }

  provideFileDecoration(uri: vscode.Uri): vscode.FileDecoration | undefined {
    for (const scm of this.controls.values()) {
      const rel = path.relative(scm.root.fsPath, uri.fsPath);
      if (rel.startsWith("..") || path.isAbsolute(rel)) continue;
      const change = this.ctx.current ? this.ctx.review(scm.sandboxId).view?.files.find((f) => f.path === rel.split(path.sep).join("/")) : undefined;
      if (change) return { badge: letters[change.status], color: new vscode.ThemeColor(colours[change.status]), tooltip: `changed in sandbox ${scm.sandboxId}`, propagate: false };
    }
    return undefined;
  }

  dispose(): void {
    this.clear();
    this.unsubscribeModel?.();
    for (const s of this.subscriptions) s.dispose();
    this.decorationEmitter.dispose();
  }

  /** The chat's sandbox (undefined: the chat ended); connects to lockroom to review it. */
  async setChatSandbox(chat: { sandboxId: string; label: string; workspace: string } | undefined): Promise<void> {
    this.chat = chat;
    if (chat) await this.ctx.connect();
    this.sync();
  }

  private sync(): void {
    const model = this.ctx.current?.sandboxes;
    if (!model) return;
    const live = new Set<string>();
    const entries = model.list().map((item) => item.entry);
    const shown = entries.filter((e) => e.state === "ready" && e.workspace).map((e) => ({ sandboxId: e.sandboxId, label: e.label || e.sandboxId, workspace: e.workspace! }));
    if (this.chat && !shown.some((e) => e.sandboxId === this.chat!.sandboxId)) shown.push(this.chat);
    for (const e of shown) {
      live.add(e.sandboxId);
      if (this.controls.has(e.sandboxId)) continue;
      const scm = new SandboxScm(this.ctx, e.sandboxId, e.label, vscode.Uri.file(e.workspace));
      this.controls.set(e.sandboxId, scm);
      this.ctx.review(e.sandboxId).onDidChange((view) =>
        this.decorationEmitter.fire(view.files.map((f) => vscode.Uri.joinPath(scm.root, f.path))),
      );
    }
    for (const [id, scm] of this.controls)
      if (!live.has(id)) {
        scm.dispose();
        this.controls.delete(id);
        this.ctx.dropReview(id);
      }
  }

  private clear(): void {
    for (const scm of this.controls.values()) scm.dispose();
    this.controls.clear();
  }
}
