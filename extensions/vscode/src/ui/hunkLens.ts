// Per-hunk decisions in the diff editor: above each hunk of a sandbox document (the right side
// of a review diff), "Accept change" (written to your file) and "Reject change" (undone in the
// sandbox). The hunk ids come from the same view the document shows, so a decision is about
// exactly what is on screen.
import * as vscode from "vscode";
import type { LockroomContext } from "./context.js";
import { kScheme, parseSandboxUri } from "./sandboxDocuments.js";

export interface HunkArgs {
  sandboxId: string;
  viewId: string;
  path: string;
  hunkId: string;
}

export class HunkLens implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.emitter.event;
  private readonly registration: vscode.Disposable;

  constructor(private readonly ctx: LockroomContext) {
    this.registration = vscode.languages.registerCodeLensProvider({ scheme: kScheme }, this);
  }

  refresh(): void {
    this.emitter.fire();
  }

  async provideCodeLenses(document: vscode.TextDocument): Promise<vscode.CodeLens[]> {
    const ref = parseSandboxUri(document.uri);
    if (!ref || ref.side !== "current") return [];
    await this.ctx.connect();
    let diff;
    try {
      diff = await this.ctx.review(ref.sandboxId).diff(ref.path, ref.viewId);
    } catch {
      return []; // the view is gone or the file no longer changed: nothing to decide here
    }
    const lenses: vscode.CodeLens[] = [];
    for (const hunk of diff.hunks) {
      // A hunk that only removes lines sits between lines of the new side: put it on the next one.
      const line = Math.min(Math.max(hunk.newStart - 1, 0), Math.max(document.lineCount - 1, 0));
      const range = new vscode.Range(line, 0, line, 0);
      const args: HunkArgs = { sandboxId: ref.sandboxId, viewId: ref.viewId, path: ref.path, hunkId: hunk.id };
      const summary = `${hunk.lines.filter((l) => l.origin === "+").length}+ ${hunk.lines.filter((l) => l.origin === "-").length}−`;
      lenses.push(
        new vscode.CodeLens(range, { command: "lockroom.applyHunk", title: `$(check) Accept change (${summary})`, arguments: [args] }),
        new vscode.CodeLens(range, { command: "lockroom.rejectHunk", title: "$(discard) Reject change", arguments: [args] }),
      );
    }
    return lenses;
  }

  dispose(): void {
    this.registration.dispose();
    this.emitter.dispose();
  }
}
