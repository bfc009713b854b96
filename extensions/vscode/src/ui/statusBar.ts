// The status bar item: how many sandboxes this window has and how many changed files wait for
// review; a click opens the review. Hidden while nothing runs.
import * as vscode from "vscode";
import type { LockroomContext } from "./context.js";

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("lockroom.status", vscode.StatusBarAlignment.Left, 50);
  private readonly subscriptions: vscode.Disposable[] = [];
  private unsubscribe: (() => void)[] = [];
  private readonly watched = new Set<string>();

  constructor(private readonly ctx: LockroomContext) {
    this.item.name = "lockroom";
    this.item.command = "lockroom.reviewChanges";
    this.subscriptions.push(
      ctx.onDidConnect((conn) => {
        for (const u of this.unsubscribe) u();
        this.watched.clear();
        this.unsubscribe = [conn.sandboxes.onDidChange(() => this.update())];
        this.update();
      }),
      ctx.onDidDisconnect(() => {
        this.item.text = "$(vm-outline) lockroom: not connected";
        this.item.tooltip = "lockroom went away; the next lockroom command reconnects";
        this.item.show();
      }),
    );
  }

  update(): void {
    const ready = (this.ctx.current?.sandboxes.list() ?? []).filter((s) => s.entry.state === "ready");
    if (!ready.length) return this.item.hide();
    let pending = 0;
    for (const s of ready) {
      const review = this.ctx.review(s.entry.sandboxId);
      pending += review.view?.files.length ?? 0;
      if (!this.watched.has(s.entry.sandboxId)) {
        this.watched.add(s.entry.sandboxId);
        this.unsubscribe.push(review.onDidChange(() => this.update()));
      }
    }
    const slow = ready.some((s) => s.entry.accel === "tcg") ? " (TCG)" : "";
    this.item.text = `$(vm-running) ${ready.length === 1 ? ready[0]!.entry.sandboxId : `${ready.length} sandboxes`}${slow}${pending ? ` · $(diff) ${pending}` : ""}`;
    this.item.tooltip = `${ready.map((s) => `${s.entry.sandboxId}: ${s.entry.label}`).join("\n")}\n${pending ? `${pending} changed file(s) to review: click` : "no changes to review"}`;
    this.item.show();
  }

  dispose(): void {
    for (const u of this.unsubscribe) u();
    for (const s of this.subscriptions) s.dispose();
    this.item.dispose();
  }
}
