// SandboxReview: the review of one sandbox's changes, as the Source Control view, the diff
// editors and the hunk actions use it. It holds the view the user is looking at (the `viewId`
// of the last listing and the diffs fetched for it), and every decision names that view, so
// lockroom applies exactly what was shown or refuses with "changed since you reviewed it"
// (protocol/workspace.md, "Views"):
//   accept  → changes/apply {viewId, select: [{path, hunks?}]}     (the host file changes)
//   reject  → changes/discard {viewId, select: [{path, hunks?}]}   (the guest file changes back)
//   branch  → changes/apply {viewId, mode: "branch", branch}
// After each decision the listing is refreshed, since the review's base moved. Refreshes are
// driven by `changes/changed` (debounced), never by a poll.
import type { LockroomClient } from "./client.js";
import { LockroomError } from "./errors.js";
import type {
  ChangesApplyResult,
  FileChange,
  FileDiff,
  FileSelection,
  Hunk,
  Refusal,
} from "../protocol/generated.js";

export interface ReviewView {
  viewId: string;
  files: FileChange[];
  refused: Refusal[];
  /** The `changes/changed` version this listing answered, when known. */
  version: number;
}

/** What an accept did, file by file, in a form a UI can say in one message. */
export interface ApplyOutcome {
  applied: string[];
  merged: string[];
  unchanged: string[];
  conflicts: { path: string; text: string }[];
  refused: { path: string; reason: string }[];
}

export interface BranchOutcome {
  created: boolean;
  branch?: string;
  commit?: string;
  conflicts: string[];
  refused: Refusal[];
}

/** A file's two sides for a diff editor: the review's base and the sandbox's version. */
export interface FileSides {
  base: Buffer | undefined;
  current: Buffer | undefined;
  binary: boolean;
}

const kRefreshDebounceMs = 150;

export class SandboxReview {
  private current: ReviewView | undefined;
  private readonly diffs = new Map<string, FileDiff>();
  private readonly listeners = new Set<(view: ReviewView) => void>();
  private latestVersion = 0;
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<ReviewView> | undefined;
  private again = false;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly client: LockroomClient,
    readonly sandboxId: string,
  ) {
    this.unsubscribe = client.on("changes/changed", (p) => {
      if (p.sandboxId !== sandboxId || p.version <= this.latestVersion) return;
      this.latestVersion = p.version;
      this.scheduleRefresh();
    });
  }

  get view(): ReviewView | undefined {
    return this.current;
  }

  /** Called with every new listing; returns the unsubscribe function. */
  onDidChange(listener: (view: ReviewView) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Something outside lockroom's notifications says the sandbox changed (the chat's agent ended a
   * tool call or a turn in a sandbox another connection owns, whose changes/changed this client
   * does not get): a refresh, debounced like a notification's.
   */
  poke(): void {
    this.scheduleRefresh();
  }

  /** A fresh look at the guest; concurrent calls share one request, and one more runs after it when asked meanwhile. */
  refresh(): Promise<ReviewView> {
    if (this.refreshing) {
      this.again = true;
      return this.refreshing;
    }
    this.refreshing = this.list().finally(() => {
      this.refreshing = undefined;
      if (this.again) {
        this.again = false;
        void this.refresh().catch(() => {});
      }
    });
    return this.refreshing;
  }

  /** The hunks of a file in the view `viewId` (default: the latest listing; fetched once per view). */
  async diff(path: string, viewId?: string): Promise<FileDiff> {
    const view = viewId ?? (this.current ?? (await this.refresh())).viewId;
    const latest = view === this.current?.viewId;
    const known = latest ? this.diffs.get(path) : undefined;
    if (known) return known;
    const answer = await this.client.request("changes/diff", { sandboxId: this.sandboxId, viewId: view, path });
    const file = answer.files.find((f) => f.path === path);
    if (!file) throw new LockroomError(`${path} has no change in this review`, { kind: "notFound" });
    if (latest && this.current?.viewId === view) this.diffs.set(path, file);
    return file;
  }

  /** The base and sandbox sides of a file in the view `viewId` (default: the latest), as bytes (absent where the side has no file). */
  async sides(path: string, viewId?: string): Promise<FileSides> {
    const view = viewId ?? (this.current ?? (await this.refresh())).viewId;
    const read = async (side: "base" | "current") => {
      try {
        const c = await this.client.request("changes/content", { sandboxId: this.sandboxId, viewId: view, path, side });
        return { bytes: Buffer.from(c.data, c.dataEncoding === "base64" ? "base64" : "utf8"), binary: c.binary };
      } catch (e) {
        if (e instanceof LockroomError && e.kind === "notFound") return undefined;
        throw e;
      }
    };
    const [base, current] = await Promise.all([read("base"), read("current")]);
    return { base: base?.bytes, current: current?.bytes, binary: Boolean(base?.binary || current?.binary) };
  }

  /**
   * Writes the chosen files (all of them without `select`) or hunks to the host folder, exactly
   * as the view `viewId` showed them (by default the latest listing; a diff editor passes the
   * view it displayed, which may be older than the list).
   */
  async accept(select?: FileSelection[], viewId?: string): Promise<ApplyOutcome> {
    const view = viewId ?? this.viewForDecision();
    const result = await this.client.request("changes/apply", { sandboxId: this.sandboxId, viewId: view, ...(select ? { select } : {}) });
    await this.afterDecision();
    return summarizeApply(result);
  }

  /** Undoes the chosen files or hunks (as `viewId` showed them) in the guest; the host is not touched. */
  async reject(select: FileSelection[], viewId?: string): Promise<number> {
    const view = viewId ?? this.viewForDecision();
    const { discarded } = await this.client.request("changes/discard", { sandboxId: this.sandboxId, viewId: view, select });
    await this.afterDecision();
    return discarded;
  }

  /** Commits the view's changes to `lockroom/<name>` in the user's repository; the checkout is not touched. */
  async saveAsBranch(name: string, force = false): Promise<BranchOutcome> {
    const result = await this.client.request("changes/apply", { sandboxId: this.sandboxId, viewId: this.viewForDecision(), mode: "branch", branch: name, force });
    if (result.mode !== "branch") throw new LockroomError("lockroom answered a branch apply with a worktree result", { kind: "protocol" });
    return {
      created: result.created,
      conflicts: result.conflicts,
      refused: result.refused,
      ...(result.branch !== undefined ? { branch: result.branch } : {}),
      ...(result.commit !== undefined ? { commit: result.commit } : {}),
    };
  }

  dispose(): void {
    this.unsubscribe();
    if (this.timer) clearTimeout(this.timer);
    this.listeners.clear();
  }

  private async list(): Promise<ReviewView> {
    const version = this.latestVersion;
    const answer = await this.client.request("changes/list", { sandboxId: this.sandboxId });
    const view: ReviewView = { viewId: answer.viewId, files: answer.files, refused: answer.refused, version };
    if (this.current?.viewId !== view.viewId) this.diffs.clear();
    this.current = view;
    for (const l of this.listeners) l(view);
    return view;
  }

  private scheduleRefresh(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.refresh().catch(() => {}); // a sandbox that ended: its owner reports that
    }, kRefreshDebounceMs);
  }

  /** The latest listing's view; a decision without one is refused rather than made on a fresh look. */
  private viewForDecision(): string {
    if (!this.current) throw new LockroomError("nothing has been reviewed yet: list the changes first", { kind: "wrongState" });
    return this.current.viewId;
  }

  private async afterDecision(): Promise<void> {
    try {
      await this.refresh();
    } catch {
      // the next changes/changed refreshes it
    }
  }
}

export function summarizeApply(result: ChangesApplyResult): ApplyOutcome {
  const out: ApplyOutcome = { applied: [], merged: [], unchanged: [], conflicts: [], refused: [] };
  if (result.mode !== "worktree") return out;
  for (const f of result.files) {
    if (f.status === "applied") out.applied.push(f.path);
    else if (f.status === "merged") out.merged.push(f.path);
    else if (f.status === "unchanged") out.unchanged.push(f.path);
    else if (f.status === "conflict")
      out.conflicts.push({ path: f.path, text: f.conflict === undefined ? "" : Buffer.from(f.conflict, f.conflictEncoding === "base64" ? "base64" : "utf8").toString("utf8") });
    else out.refused.push({ path: f.path, reason: f.reason ?? "refused" });
  }
  return out;
}

/** One sentence for a notification: "Applied 2 files; 1 conflict (a.txt): resolve it in the merge editor." */
export function describeApply(o: ApplyOutcome): string {
  const parts: string[] = [];
  const n = (k: number, one: string, many = one + "s") => `${k} ${k === 1 ? one : many}`;
  if (o.applied.length) parts.push(`applied ${n(o.applied.length, "file")}`);
  if (o.merged.length) parts.push(`merged ${n(o.merged.length, "file")} with your edits`);
  if (o.unchanged.length) parts.push(`${n(o.unchanged.length, "file")} already as in the sandbox`);
  if (o.conflicts.length) parts.push(`${n(o.conflicts.length, "conflict")} (${o.conflicts.map((c) => c.path).join(", ")}), nothing written to ${o.conflicts.length === 1 ? "it" : "them"}`);
  if (o.refused.length) parts.push(`${n(o.refused.length, "file")} refused (${o.refused.map((r) => `${r.path}: ${r.reason}`).join("; ")})`);
  if (!parts.length) return "Nothing was applied.";
  const text = parts.join("; ");
  return text[0]!.toUpperCase() + text.slice(1) + ".";
}

/** The hunk of a file diff whose new-side lines hold `line` (1-based), for "accept the hunk here". */
export function hunkAtLine(diff: FileDiff, line: number): Hunk | undefined {
  return diff.hunks.find((h) => line >= h.newStart && line < h.newStart + Math.max(h.newLines, 1));
}
