// A copy of a ChatModel's state kept from its snapshots and patches (chatTypes.ts): the webview
// renders from one, and the extension keeps one to answer "open this diff" without asking the
// model for a whole snapshot. applyPatch() says which entries changed or went, so the webview
// re-renders only those; a patch that does not start at this copy's version is refused (the
// holder then asks for a snapshot). Pure: no DOM, no vscode.
import type { ChatEntry, ChatPatch, ChatSessionState, ChatSnapshot, DroppedCounts } from "../../core/acp/chatTypes.js";

export interface TranscriptChange {
  /** Everything was replaced (a snapshot): render all entries anew. */
  reset: boolean;
  /** Ids of entries added or replaced, in transcript order. */
  changed: number[];
  /** Ids of entries dropped (the oldest). */
  removed: number[];
}

const emptySession: ChatSessionState = { busy: false, ended: false, modes: null, configOptions: [], commands: [], title: null, usage: null };

export class Transcript {
  /** -1 until the first snapshot. */
  version = -1;
  entries: ChatEntry[] = [];
  session: ChatSessionState = emptySession;
  pendingQuestions: { questionId: string; entryId: number }[] = [];
  dropped: DroppedCounts = { entries: 0, ignoredUpdates: 0 };
  private readonly byId = new Map<number, number>();

  /** Replaces everything with `s`. */
  applySnapshot(s: ChatSnapshot): TranscriptChange {
    const removed = this.entries.map((e) => e.id);
    this.version = s.version;
    this.entries = [...s.entries];
    this.session = s.session;
    this.pendingQuestions = s.pendingQuestions;
    this.dropped = s.dropped;
    this.reindex();
    return { reset: true, changed: this.entries.map((e) => e.id), removed };
  }

  /** Applies `p` when it starts at this version; null (nothing changed) when it does not. */
  applyPatch(p: ChatPatch): TranscriptChange | null {
    if (p.since !== this.version) return null;
    const removed: number[] = [];
    let keepFrom = 0;
    while (keepFrom < this.entries.length && this.entries[keepFrom]!.id < p.firstEntryId) removed.push(this.entries[keepFrom++]!.id);
    if (keepFrom) {
      this.entries = this.entries.slice(keepFrom);
      this.reindex();
    }
    const changed: number[] = [];
    for (const entry of p.entries) {
      if (entry.id < p.firstEntryId) continue;
      const at = this.byId.get(entry.id);
      if (at !== undefined) this.entries[at] = entry;
      else {
        this.byId.set(entry.id, this.entries.length);
        this.entries.push(entry);
      }
      changed.push(entry.id);
    }
    this.version = p.version;
    this.session = p.session;
    this.pendingQuestions = p.pendingQuestions;
    this.dropped = p.dropped;
    return { reset: false, changed, removed };
  }

  /** Back to no transcript (version -1). */
  clear(): TranscriptChange {
    const removed = this.entries.map((e) => e.id);
    this.version = -1;
    this.entries = [];
    this.session = emptySession;
    this.pendingQuestions = [];
    this.dropped = { entries: 0, ignoredUpdates: 0 };
    this.byId.clear();
    return { reset: true, changed: [], removed };
  }

  entry(id: number): ChatEntry | undefined {
    const at = this.byId.get(id);
    return at === undefined ? undefined : this.entries[at];
  }

  /** The state as a snapshot (shares the entries; postMessage copies). */
  toSnapshot(): ChatSnapshot {
    return { version: this.version, entries: this.entries, session: this.session, pendingQuestions: this.pendingQuestions, dropped: this.dropped };
  }

  private reindex(): void {
    this.byId.clear();
    this.entries.forEach((e, i) => this.byId.set(e.id, i));
  }
}
