// Review commands: apply or discard a file, all files, or one hunk; save as a branch; resolve
// a conflict in the merge editor; focus the review. Every decision names the view it was made
// on; the outcome is said in one notification (conflicts with a button to resolve them).
import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { describeApply, hunkAtLine, type ApplyOutcome } from "../../core/review.js";
import type { LockroomContext } from "../context.js";
import type { HunkArgs, HunkLens } from "../hunkLens.js";
import type { ChangeState, ReviewScm } from "../scm.js";
import { parseSandboxUri, sandboxUri, type SandboxDocuments } from "../sandboxDocuments.js";

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export function registerReviewCommands(ctx: LockroomContext, scm: ReviewScm, docs: SandboxDocuments, lens: HunkLens): vscode.Disposable[] {
  // Says what an accept did. The question of a conflict is not waited for: what the command does
  // next (a diff reopened on the new view) must not cover the merge editor the answer opens later.
  const report = async (sandboxId: string, viewId: string, outcome: ApplyOutcome) => {
    scm.get(sandboxId)?.showConflicts(viewId, outcome);
    const text = describeApply(outcome);
    if (outcome.conflicts.length) {
      const c = outcome.conflicts[0]!;
      void vscode.window.showWarningMessage(`lockroom: ${text}`, "Resolve in Merge Editor").then((choice) => {
        if (choice) void vscode.commands.executeCommand("lockroom.resolveConflict", sandboxId, viewId, c.path);
      });
    } else if (outcome.refused.length) {
      void vscode.window.showWarningMessage(`lockroom: ${text}`);
    } else {
      void vscode.window.showInformationMessage(`lockroom: ${text}`);
    }
  };

  const guarded =
    <A extends unknown[]>(what: string, fn: (...args: A) => Promise<void>) =>
    async (...args: A) => {
      try {
        await fn(...args);
      } catch (e) {
        void vscode.window.showErrorMessage(`lockroom: ${what} failed: ${errorText(e)}`);
      }
    };

  /** After a hunk decision the open diff shows an older view: show the file's new view instead. */
  const reopenDiff = async (sandboxId: string, oldViewId: string, file: string) => {
    const review = ctx.review(sandboxId);
    const view = review.view;
    const oldUri = sandboxUri({ sandboxId, viewId: oldViewId, path: file, side: "current" }).toString();
    for (const group of vscode.window.tabGroups.all)
      for (const tab of group.tabs)
        if (tab.input instanceof vscode.TabInputTextDiff && tab.input.modified.toString() === oldUri) await vscode.window.tabGroups.close(tab);
    const change = view?.files.find((f) => f.path === file);
    if (!view || !change) return;
    const left = sandboxUri({ sandboxId, viewId: view.viewId, path: change.oldPath ?? change.path, side: "base" });
    const right = sandboxUri({ sandboxId, viewId: view.viewId, path: change.path, side: "current" });
    await vscode.commands.executeCommand("vscode.diff", left, right, `${path.basename(file)} (base ↔ sandbox ${sandboxId})`);
    lens.refresh();
  };

  /** The hunk under the cursor of a sandbox document (the right side of a review diff). */
  const hunkAtCursor = async (): Promise<HunkArgs | undefined> => {
    const editor = vscode.window.activeTextEditor;
    const ref = editor ? parseSandboxUri(editor.document.uri) : undefined;
    if (!editor || !ref || ref.side !== "current") {
      void vscode.window.showInformationMessage("lockroom: put the cursor in the sandbox side (right) of a review diff first.");
      return undefined;
    }
    const diff = await ctx.review(ref.sandboxId).diff(ref.path, ref.viewId);
    const hunk = hunkAtLine(diff, editor.selection.active.line + 1);
    if (!hunk) {
      void vscode.window.showInformationMessage("lockroom: no change at the cursor.");
      return undefined;
    }
    return { sandboxId: ref.sandboxId, viewId: ref.viewId, path: ref.path, hunkId: hunk.id };
  };

  return [
    vscode.commands.registerCommand("lockroom.acceptHunkAtCursor", guarded("Accept change", async () => {
      const args = await hunkAtCursor();
      if (args) await vscode.commands.executeCommand("lockroom.applyHunk", args);
    })),
    vscode.commands.registerCommand("lockroom.rejectHunkAtCursor", guarded("Reject change", async () => {
      const args = await hunkAtCursor();
      if (args) await vscode.commands.executeCommand("lockroom.rejectHunk", args);
    })),
    vscode.commands.registerCommand("lockroom.reviewChanges", guarded("Review", async (sandboxId?: string) => {
      await ctx.connect();
      const id = await scm.pick(typeof sandboxId === "string" ? sandboxId : undefined);
      if (!id) return void vscode.window.showInformationMessage("lockroom: no sandbox with a workspace to review.");
      await ctx.review(id).refresh();
      await vscode.commands.executeCommand("workbench.view.scm");
    })),
    vscode.commands.registerCommand("lockroom.applyFile", guarded("Apply", async (...states: ChangeState[]) => {
      const chosen = states.flat().filter((s): s is ChangeState => Boolean(s && (s as ChangeState).change));
      if (!chosen.length) return;
      const { sandboxId, viewId } = chosen[0]!;
      const outcome = await ctx.review(sandboxId).accept(chosen.map((s) => ({ path: s.change.path })), viewId);
      await report(sandboxId, viewId, outcome);
    })),
    vscode.commands.registerCommand("lockroom.discardFile", guarded("Discard", async (...states: ChangeState[]) => {
      const chosen = states.flat().filter((s): s is ChangeState => Boolean(s && (s as ChangeState).change));
      if (!chosen.length) return;
      const names = chosen.map((s) => s.change.path).join(", ");
      const ok = await vscode.window.showWarningMessage(`Discard the agent's changes to ${names} in the sandbox? Your files are not touched.`, { modal: true }, "Discard");
      if (ok !== "Discard") return;
      await ctx.review(chosen[0]!.sandboxId).reject(chosen.map((s) => ({ path: s.change.path })), chosen[0]!.viewId);
    })),
    vscode.commands.registerCommand("lockroom.applyAll", guarded("Apply all", async (arg?: unknown) => {
      const id = await scm.pick(typeof arg === "string" ? arg : undefined);
      if (!id) return;
      const review = ctx.review(id);
      const view = review.view ?? (await review.refresh());
      if (!view.files.length) return void vscode.window.showInformationMessage("lockroom: nothing to apply.");
      const outcome = await review.accept(undefined, view.viewId);
      await report(id, view.viewId, outcome);
    })),
    vscode.commands.registerCommand("lockroom.discardAll", guarded("Discard all", async (arg?: unknown) => {
      const id = await scm.pick(typeof arg === "string" ? arg : undefined);
      if (!id) return;
      const review = ctx.review(id);
      const view = review.view ?? (await review.refresh());
      if (!view.files.length) return;
      const ok = await vscode.window.showWarningMessage(`Discard all ${view.files.length} changed files in the sandbox? Your files are not touched.`, { modal: true }, "Discard All");
      if (ok !== "Discard All") return;
      await review.reject(view.files.map((f) => ({ path: f.path })), view.viewId);
    })),
    vscode.commands.registerCommand("lockroom.applyHunk", guarded("Accept change", async (args: HunkArgs) => {
      const outcome = await ctx.review(args.sandboxId).accept([{ path: args.path, hunks: [args.hunkId] }], args.viewId);
      await report(args.sandboxId, args.viewId, outcome);
      await reopenDiff(args.sandboxId, args.viewId, args.path);
    })),
    vscode.commands.registerCommand("lockroom.rejectHunk", guarded("Reject change", async (args: HunkArgs) => {
      await ctx.review(args.sandboxId).reject([{ path: args.path, hunks: [args.hunkId] }], args.viewId);
      await reopenDiff(args.sandboxId, args.viewId, args.path);
    })),
    vscode.commands.registerCommand("lockroom.saveAsBranch", guarded("Save as branch", async (arg?: unknown) => {
      const id = await scm.pick(typeof arg === "string" ? arg : (arg as { id?: string } | undefined)?.id);
      if (!id) return;
      const review = ctx.review(id);
      if (!review.view) await review.refresh();
      const name = await vscode.window.showInputBox({ prompt: "Branch name (made as lockroom/<name>; your checkout is not touched)", value: id });
      if (!name) return;
      let result = await review.saveAsBranch(name);
      if (!result.created && !result.conflicts.length) {
        const again = await vscode.window.showWarningMessage(`lockroom/${name} exists. Replace it?`, { modal: true }, "Replace");
        if (again !== "Replace") return;
        result = await review.saveAsBranch(name, true);
      }
      if (result.conflicts.length)
        return void vscode.window.showWarningMessage(`lockroom: no branch written: the changes conflict with your HEAD in ${result.conflicts.join(", ")}.`);
      void vscode.window.showInformationMessage(`lockroom: saved as ${result.branch?.replace("refs/heads/", "")} (${result.commit?.slice(0, 8)}). Merge it with git when you are ready.`);
    })),
    vscode.commands.registerCommand("lockroom.resolveConflict", guarded("Resolve conflict", async (sandboxId: string, viewId: string, file: string) => {
      // The chat's sandbox is not this window's connection's: its source control knows the folder.
      const root = ctx.current?.sandboxes.get(sandboxId)?.entry.workspace ?? scm.get(sandboxId)?.root.fsPath;
      if (!root) throw new Error(`sandbox ${sandboxId} has no workspace`);
      const host = path.join(root, file);
      const yours = docs.keepYours({ sandboxId, viewId, path: file }, fs.readFileSync(host, "utf8"));
      await vscode.commands.executeCommand("_open.mergeEditor", {
        base: sandboxUri({ sandboxId, viewId, path: file, side: "base" }),
        input1: { uri: yours, title: "Yours", description: "your file now" },
        input2: { uri: sandboxUri({ sandboxId, viewId, path: file, side: "current" }), title: "Sandbox", description: sandboxId },
        output: vscode.Uri.file(host),
      });
    })),
  ];
}
