// What the chat view says about entries, as plain data: labels of tool kinds, statuses and stop
// reasons, paths shown relative to the workspace, the rows of a change's file list (with line
// counts), and when a kept review still offers "Apply file" / "Discard file". Pure (no DOM), so
// the tests check it directly; render.ts turns it into elements.
import type { ChatEntry, ChatSessionState, ExitEntry, ToolEntry } from "../../core/acp/chatTypes.js";
import { lineCounts } from "./lineStats.js";
import { fileActionKey, type FileActions } from "./protocol.js";

export function toolKindLabel(kind: ToolEntry["toolKind"]): string {
  const labels: Record<ToolEntry["toolKind"], string> = {
    read: "Read",
    edit: "Edit",
    delete: "Delete",
    move: "Move",
    search: "Search",
    execute: "Run",
    think: "Think",
    fetch: "Network",
    switch_mode: "Mode",
    other: "Tool",
  };
  return labels[kind] ?? "Tool";
}

export function toolStatusLabel(status: ToolEntry["status"]): string {
  const labels: Record<ToolEntry["status"], string> = { pending: "Pending", in_progress: "Running", completed: "Done", failed: "Failed" };
  return labels[status] ?? status;
}

/** How a turn ended, for the line under it; null for a plain end (nothing to say). */
export function stopReasonText(reason: string): string | null {
  switch (reason) {
    case "end_turn":
      return null;
    case "cancelled":
      return "Stopped.";
    case "max_tokens":
      return "The agent stopped: it reached its output limit (max tokens).";
    case "max_turn_requests":
      return "The agent stopped: it reached its limit of requests for one turn.";
    case "refusal":
      return "The agent refused to go on.";
    default:
      return `The turn ended (${reason}).`;
  }
}

/** The process's end: one line, and whether it is an error. */
export function exitText(e: ExitEntry): { text: string; error: boolean } {
  if (e.expected) return { text: "This chat ended; its sandbox is gone.", error: false };
  const how = e.signal ? `killed by ${e.signal}` : `exit code ${e.code}`;
  return { text: `lockroom stopped unexpectedly (${how}); the sandbox is gone.`, error: true };
}

/** `abs` relative to `root` when under it (as the user knows the file), else as it is. */
export function displayPath(abs: string, root: string | null): string {
  if (!root) return abs;
  const base = root.endsWith("/") ? root : `${root}/`;
  return abs.startsWith(base) ? abs.slice(base.length) : abs;
}

export interface FileRow {
  /** Workspace-relative when under the workspace (what _lockroom/apply takes). */
  path: string;
  /** Index of its diff in the entry's content, null when it has none (binary, too large, …). */
  diffIndex: number | null;
  added: number;
  removed: number;
  approximate: boolean;
  change: "added" | "deleted" | "modified";
  /** Why no counts or diff can be shown, when so. */
  note: string | null;
}

/**
 * The files a tool entry changes: for lockroom's review, its files in order, each with its diff
 * when the content has one; for an agent's edit, each diff of the content.
 */
export function fileRows(entry: ToolEntry, root: string | null): FileRow[] {
  const diffs = new Map<string, number>();
  entry.content.forEach((c, i) => {
    if (c.type === "diff") diffs.set(displayPath(c.path, root), i);
  });
  const paths = entry.review ? [...entry.review.files] : [];
  for (const p of diffs.keys()) if (!paths.includes(p)) paths.push(p);
  return paths.map((path) => {
    const index = diffs.get(path);
    const item = index === undefined ? undefined : entry.content[index];
    if (!item || item.type !== "diff") return { path, diffIndex: null, added: 0, removed: 0, approximate: false, change: "modified", note: "no text diff to show" };
    const change = item.isNewFile ? "added" : item.newText === "" && item.oldText !== null && item.oldText !== "" ? "deleted" : "modified";
    if (item.omittedChars !== undefined)
      return { path, diffIndex: null, added: 0, removed: 0, approximate: false, change, note: `too large to show here (${formatCount(item.omittedChars)} characters)` };
    const counts = lineCounts(item.oldText, item.newText);
    return { path, diffIndex: index!, ...counts, change, note: null };
  });
}

/** Text items of a review's content: lockroom's lines about files it cannot show as diffs. */
export function reviewNotes(entry: ToolEntry): string[] {
  return entry.content.flatMap((c) => (c.type === "text" ? [c.text] : []));
}

/** The id of the last user message (the start of the latest turn), 0 when there is none. */
export function latestTurnStart(entries: readonly ChatEntry[]): number {
  for (let i = entries.length - 1; i >= 0; i--) if (entries[i]!.kind === "user") return entries[i]!.id;
  return 0;
}

/**
 * Whether a review entry offers "Apply file" / "Discard file": it belongs to the latest turn (so
 * nothing ran in the sandbox since), it was not all applied (kept, or some files failed), its
 * question is over, and the chat is idle.
 */
export function offersFileActions(entry: ToolEntry, turnStart: number, session: ChatSessionState): boolean {
  if (!entry.review || entry.id < turnStart) return false;
  if (session.busy || session.ended) return false;
  if (entry.question?.state === "pending") return false;
  return entry.status === "failed" && entry.review.viewId !== null;
}

/** Files of the latest turn's kept review not applied or discarded since (what ending the chat loses). */
export function unappliedReviewFiles(entries: readonly ChatEntry[], session: ChatSessionState, fileActions: FileActions): string[] {
  const turnStart = latestTurnStart(entries);
  const review = entries.findLast((e): e is ToolEntry => e.kind === "tool" && e.review !== undefined && e.id > turnStart);
  if (!review?.review || !offersFileActions(review, turnStart, { ...session, busy: false })) return [];
  return review.review.files.filter((f) => {
    const state = fileActions[fileActionKey(review.id, f)]?.state;
    return state !== "applied" && state !== "discarded";
  });
}

/** 12345 → "12,345" (the same in every locale, for tests). */
export function formatCount(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** Tokens as "12.3k". */
export function formatTokens(n: number): string {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}
