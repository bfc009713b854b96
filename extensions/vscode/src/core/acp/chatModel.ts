// ChatModel: reduces one ACP session's stream — the user's prompts, session/update, permission
// questions, turn ends and errors, the process's exit — into the transcript the chat panel's
// webview renders (chatTypes.ts), as plain JSON.
//
// Reduction: consecutive agent_message_chunk (and agent_thought_chunk, user_message_chunk) texts
// concatenate into one entry until another entry comes between (or the chunk's messageId
// changes); tool calls are keyed by toolCallId and tool_call_update merges the fields it carries
// (null or absent means unchanged; content and locations replace the old lists); lockroom's review
// (`lockroom-review-N`) is a tool entry with `review` set (files and viewId from its rawInput, the
// final text — applied, or why not — as `outcome`); a plan replaces the plan entry of the current
// turn (a turn's first plan is a new entry); a mode change is an entry and session state; config
// options, available commands, the session title and usage are session state, latest wins.
// Permission questions hang on their tool entry (made from the question's toolCall when the agent
// sent none) until answered, cancelled, or withdrawn by the agent.
//
// Bounds (ChatLimits, defaults in `defaultChatLimits`): at most 2000 entries and 32 Mi characters
// of text in all — beyond either, the oldest entries are dropped (a pending question on one is
// answered "cancelled") and counted in `dropped.entries`; message and thought text is cut at 200 Ki
// characters per entry (the rest is counted in `truncatedChars`); a tool call keeps at most 500
// content items (`droppedContent`), the last 64 Ki characters of each text item, diffs up to
// 2 Mi characters each and 16 Mi per tool call (larger ones keep their path, with
// `omittedChars`); plans keep 200 items, commands 500, locations 200. Binary data (images,
// audio, blobs) and rawInput/rawOutput are never kept (the review's files and viewId excepted).
//
// Webview protocol: every change increments `version`; listeners of onChange() are called at most
// once per `coalesceMs` (50 ms) with the current version. The panel sends the webview a
// `snapshot()` when it (re)loads and afterwards `changesSince(versionItHas)`: changed entries
// whole, plus the (small) session state. Entries are never reordered and only the oldest are ever
// removed, so a patch is "replace or append these by id, drop ids below firstEntryId".
import type * as acp from "@agentclientprotocol/sdk";
import { blockMarkdown, shownBlocks, shownChars, toolContent, toolContentChars } from "./chatContent.js";
import type {
  ChatEntry,
  ChatPatch,
  ChatSessionState,
  ChatSnapshot,
  DroppedCounts,
  PlanEntry,
  ReviewInfo,
  TextEntry,
  ToolEntry,
  UserEntry,
} from "./chatTypes.js";
import { defaultChatLimits, realScheduler, type ChatLimits, type ChatModelOptions, type ChatScheduler } from "./chatLimits.js";

export { defaultChatLimits, type ChatLimits, type ChatModelOptions, type ChatScheduler } from "./chatLimits.js";

/** The process's end as the model records it (AgentExit fits). */
export interface ChatExit {
  code: number | null;
  signal: string | null;
  stderrTail: string[];
  expected: boolean;
}

const reviewPrefix = "lockroom-review-";

interface Pending {
  entry: ToolEntry;
  resolve: (outcome: acp.RequestPermissionOutcome) => void;
}

export class ChatModel {
  readonly limits: ChatLimits;
  private readonly coalesceMs: number;
  private readonly scheduler: ChatScheduler;
  private entries: ChatEntry[] = [];
  private readonly sizes = new Map<number, number>();
  private totalChars = 0;
  private readonly tools = new Map<string, ToolEntry>();
  private readonly messageIds = new Map<number, string | null>();
  private readonly pending = new Map<string, Pending>();
  private readonly listeners = new Set<(version: number) => void>();
  private session: ChatSessionState = { busy: false, ended: false, modes: null, configOptions: [], commands: [], title: null, usage: null };
  private dropped: DroppedCounts = { entries: 0, ignoredUpdates: 0 };
  private currentPlan: PlanEntry | undefined;
  private nextId = 1;
  private questions = 0;
  private versionValue = 0;
  private timer: unknown;
  private lastEmit = -Infinity;

  constructor(options: ChatModelOptions = {}) {
    this.limits = { ...defaultChatLimits, ...options.limits };
    this.coalesceMs = options.coalesceMs ?? 50;
    this.scheduler = options.scheduler ?? realScheduler;
  }

  get version(): number {
    return this.versionValue;
  }

  /** A turn is running. */
  get busy(): boolean {
    return this.session.busy;
  }

  /** The process ended. */
  get ended(): boolean {
    return this.session.ended;
  }

  /** Called with the version at most once per coalesceMs after changes; returns an unsubscribe function. */
  onChange(listener: (version: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The whole state, as a copy. */
  snapshot(): ChatSnapshot {
    return structuredClone({
      version: this.versionValue,
      entries: this.entries,
      session: this.session,
      pendingQuestions: this.pendingQuestions(),
      dropped: this.dropped,
    });
  }

  /** What changed after `since` (see ChatPatch), as a copy. */
  changesSince(since: number): ChatPatch {
    return structuredClone({
      since,
      version: this.versionValue,
      firstEntryId: this.entries[0]?.id ?? this.nextId,
      entries: this.entries.filter((e) => e.version > since),
      session: this.session,
      pendingQuestions: this.pendingQuestions(),
      dropped: this.dropped,
    });
  }

  /** Stops the change timer (the model stays readable). */
  dispose(): void {
    if (this.timer !== undefined) this.scheduler.clearTimeout(this.timer);
    this.timer = undefined;
    this.listeners.clear();
  }

  // --- what the session tells --------------------------------------------------------------------

  /** session/new's answer: modes and config options. */
  started(session: acp.NewSessionResponse): void {
    const modes = session.modes;
    this.session.modes = modes
      ? {
          currentModeId: modes.currentModeId,
          availableModes: modes.availableModes.map((m) => ({ id: m.id, name: m.name, description: m.description ?? null })),
        }
      : null;
    this.session.configOptions = session.configOptions ?? [];
    this.changed();
  }

  /** The user sent a prompt: a user entry, and the session is busy until the turn ends. */
  userMessage(blocks: acp.ContentBlock[]): void {
    const { content, truncatedChars } = shownBlocks(blocks, this.limits.textChars);
    const entry: UserEntry = { id: 0, version: 0, kind: "user", content, ...(truncatedChars ? { truncatedChars } : {}) };
    this.currentPlan = undefined;
    this.session.busy = true;
    this.add(entry);
  }

  /** One session/update. */
  update(u: acp.SessionUpdate): void {
    switch (u.sessionUpdate) {
      case "agent_message_chunk":
        return this.chunk("agent", u.content, u.messageId ?? null);
      case "agent_thought_chunk":
        return this.chunk("thought", u.content, u.messageId ?? null);
      case "user_message_chunk":
        return this.userChunk(u.content);
      case "tool_call":
      case "tool_call_update":
        this.mergeTool(u);
        return;
      case "plan":
        return this.plan(u.entries);
      case "current_mode_update":
        return this.modeChanged(u.currentModeId);
      case "config_option_update":
        this.session.configOptions = u.configOptions;
        return this.changed();
      case "available_commands_update":
        this.session.commands = u.availableCommands
          .slice(0, this.limits.commands)
          .map((c) => ({ name: c.name, description: c.description, hint: c.input && "hint" in c.input ? c.input.hint : null }));
        return this.changed();
      case "session_info_update":
        if (u.title !== undefined) this.session.title = u.title;
        return this.changed();
      case "usage_update":
        this.session.usage = { used: u.used, size: u.size };
        return this.changed();
      case "notice":
        this.add({ id: 0, version: 0, kind: "notice", severity: u.severity, title: u.title, description: u.description ?? null });
        return;
      default:
        this.dropped.ignoredUpdates++;
        return this.changed();
    }
  }

  /** A notice of the editor's own (e.g. the chat was resumed after a window reload). */
  notice(severity: "info" | "warning" | "error", title: string, description: string | null = null): void {
    this.add({ id: 0, version: 0, kind: "notice", severity, title, description });
  }

  /** The prompt's answer. */
  turnEnded(stopReason: acp.StopReason): void {
    this.session.busy = false;
    this.add({ id: 0, version: 0, kind: "turnEnd", stopReason });
  }

  /** The prompt failed (the agent crashed, lockroom's error, the process gone). */
  turnFailed(message: string): void {
    this.session.busy = false;
    this.add({ id: 0, version: 0, kind: "turnError", message });
  }

  /** A mode the user set (session/set_mode succeeded); nothing new if the agent already said so. */
  modeChanged(modeId: string): void {
    if (this.session.modes?.currentModeId === modeId) return;
    const name = this.session.modes?.availableModes.find((m) => m.id === modeId)?.name ?? null;
    if (this.session.modes) this.session.modes.currentModeId = modeId;
    else this.session.modes = { currentModeId: modeId, availableModes: [] };
    this.add({ id: 0, version: 0, kind: "mode", modeId, name });
  }

  /** session/set_config_option's answer. */
  configOptionsChanged(options: acp.SessionConfigOption[]): void {
    this.session.configOptions = options;
    this.changed();
  }

  /** The process ended: an entry, pending questions cancelled, nothing busy any more. */
  exited(exit: ChatExit): void {
    if (this.session.ended) return;
    this.cancelQuestions();
    this.session.ended = true;
    this.session.busy = false;
    this.add({ id: 0, version: 0, kind: "exit", code: exit.code, signal: exit.signal, stderrTail: [...exit.stderrTail], expected: exit.expected });
  }

  // --- permission questions -------------------------------------------------------------------

  /**
   * A session/request_permission: shown on its tool entry until answer() (or `signal` aborting,
   * or cancelQuestions()). Fits AgentConnection's PermissionHandler.
   */
  ask(request: acp.RequestPermissionRequest, signal?: AbortSignal): Promise<acp.RequestPermissionOutcome> {
    if (this.session.ended) return Promise.resolve({ outcome: "cancelled" });
    const entry = this.mergeTool(request.toolCall);
    if (entry.question?.state === "pending") this.settle(entry.question.questionId, { outcome: "cancelled" });
    const questionId = `q${++this.questions}`;
    entry.question = { questionId, options: request.options.map((o) => ({ optionId: o.optionId, name: o.name, kind: o.kind })), state: "pending" };
    this.touch(entry);
    return new Promise((resolve) => {
      const onAbort = () => this.settle(questionId, { outcome: "cancelled" });
      this.pending.set(questionId, {
        entry,
        resolve: (outcome) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(outcome);
        },
      });
      if (signal?.aborted) onAbort();
      else signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /**
   * The user's answer: an option of the question, or null to dismiss it (cancelled). False when
   * the question is no longer pending or has no such option (a stale click).
   */
  answer(questionId: string, optionId: string | null): boolean {
    const p = this.pending.get(questionId);
    if (!p) return false;
    if (optionId === null) {
      this.settle(questionId, { outcome: "cancelled" });
      return true;
    }
    if (!p.entry.question?.options.some((o) => o.optionId === optionId)) return false;
    this.settle(questionId, { outcome: "selected", optionId });
    return true;
  }

  /** Every pending question answered "cancelled" (ACP: the client does so when it cancels a turn). */
  cancelQuestions(): void {
    for (const questionId of [...this.pending.keys()]) this.settle(questionId, { outcome: "cancelled" });
  }

  // --- reduction --------------------------------------------------------------------------------

  private chunk(kind: "agent" | "thought", block: acp.ContentBlock, messageId: string | null): void {
    const text = blockMarkdown(block);
    const last = this.entries.at(-1);
    const lastMessageId = last ? this.messageIds.get(last.id) : undefined;
    const sameMessage = messageId === null || lastMessageId === null || lastMessageId === undefined || lastMessageId === messageId;
    if (last && last.kind === kind && sameMessage) {
      if (messageId !== null) this.messageIds.set(last.id, messageId);
      return this.appendText(last, text);
    }
    const entry: TextEntry = { id: 0, version: 0, kind, markdown: "" };
    this.cutText(entry, text);
    this.add(entry);
    this.messageIds.set(entry.id, messageId);
  }

  private appendText(entry: TextEntry, text: string): void {
    this.cutText(entry, text);
    this.touch(entry);
  }

  /** Appends what fits of `text` under the cap per entry; counts the rest. */
  private cutText(entry: TextEntry, text: string): void {
    const room = Math.max(0, this.limits.textChars - entry.markdown.length);
    if (text.length > room) entry.truncatedChars = (entry.truncatedChars ?? 0) + text.length - room;
    entry.markdown += text.length > room ? text.slice(0, room) : text;
  }

  private userChunk(block: acp.ContentBlock): void {
    const last = this.entries.at(-1);
    const target: UserEntry = last?.kind === "user" ? last : this.add({ id: 0, version: 0, kind: "user", content: [] });
    const used = target.content.reduce((n, b) => n + shownChars(b), 0);
    const { content, truncatedChars } = shownBlocks([block], Math.max(0, this.limits.textChars - used));
    const prev = target.content.at(-1);
    const next = content[0];
    if (prev?.type === "text" && next?.type === "text" && content.length === 1) prev.text += next.text;
    else target.content.push(...content);
    if (truncatedChars) target.truncatedChars = (target.truncatedChars ?? 0) + truncatedChars;
    this.touch(target);
  }

  /** tool_call, tool_call_update, or a permission request's toolCall: the entry, made or merged. */
  private mergeTool(u: acp.ToolCallUpdate): ToolEntry {
    let entry = this.tools.get(u.toolCallId);
    if (!entry) {
      entry = { id: 0, version: 0, kind: "tool", toolCallId: u.toolCallId, title: u.title ?? u.toolCallId, toolKind: "other", status: "pending", locations: [], content: [] };
      this.add(entry);
      this.tools.set(u.toolCallId, entry);
    }
    if (u.title !== undefined && u.title !== null) entry.title = u.title;
    if (u.kind) entry.toolKind = u.kind;
    if (u.status) entry.status = u.status;
    if (u.locations) entry.locations = u.locations.slice(0, this.limits.locations).map((l) => ({ path: l.path, line: l.line ?? null }));
    if (u.content) {
      const { content, dropped } = toolContent(u.content, {
        textChars: this.limits.toolTextChars,
        diffChars: this.limits.diffChars,
        entryChars: this.limits.toolEntryChars,
        items: this.limits.toolItems,
      });
      entry.content = content;
      if (dropped) entry.droppedContent = dropped;
      else delete entry.droppedContent;
    }
    if (u.toolCallId.startsWith(reviewPrefix)) this.reviewFields(entry, u);
    this.touch(entry);
    return entry;
  }

  private reviewFields(entry: ToolEntry, u: acp.ToolCallUpdate): void {
    const review: ReviewInfo = entry.review ?? { sandboxId: null, viewId: null, files: [], outcome: null };
    const raw = u.rawInput;
    if (typeof raw === "object" && raw !== null) {
      const r = raw as { sandboxId?: unknown; viewId?: unknown; files?: unknown };
      if (typeof r.sandboxId === "string") review.sandboxId = r.sandboxId;
      if (typeof r.viewId === "string") review.viewId = r.viewId;
      if (Array.isArray(r.files)) review.files = r.files.filter((f): f is string => typeof f === "string").slice(0, this.limits.toolItems);
    }
    const last = entry.content.at(-1);
    if ((u.status === "completed" || u.status === "failed") && u.content && last?.type === "text") review.outcome = last.text;
    entry.review = review;
  }

  private plan(items: acp.PlanEntry[]): void {
    const entries = items.slice(0, this.limits.planItems).map((e) => ({ content: e.content, priority: e.priority, status: e.status }));
    if (this.currentPlan && this.sizes.has(this.currentPlan.id)) {
      this.currentPlan.entries = entries;
      return this.touch(this.currentPlan);
    }
    this.currentPlan = this.add({ id: 0, version: 0, kind: "plan", entries });
  }

  private settle(questionId: string, outcome: acp.RequestPermissionOutcome): void {
    const p = this.pending.get(questionId);
    if (!p) return;
    this.pending.delete(questionId);
    const q = p.entry.question;
    if (q?.questionId === questionId) {
      q.state = outcome.outcome === "selected" ? "selected" : "cancelled";
      if (outcome.outcome === "selected") q.optionId = outcome.optionId;
      this.touch(p.entry);
    }
    p.resolve(outcome);
  }

  private pendingQuestions(): { questionId: string; entryId: number }[] {
    return [...this.pending].map(([questionId, p]) => ({ questionId, entryId: p.entry.id }));
  }

  // --- bookkeeping ------------------------------------------------------------------------------

  /** Appends `entry` with the next id; returns it. */
  private add<E extends ChatEntry>(entry: E): E {
    entry.id = this.nextId++;
    this.entries.push(entry);
    this.sizes.set(entry.id, 0);
    this.touch(entry);
    return entry;
  }

  /** `entry` changed: new version, its size recounted, the bounds kept, a change event scheduled. */
  private touch(entry: ChatEntry): void {
    entry.version = ++this.versionValue;
    const before = this.sizes.get(entry.id);
    if (before !== undefined) {
      const after = entrySize(entry);
      this.sizes.set(entry.id, after);
      this.totalChars += after - before;
      this.keepBounds();
    }
    this.schedule();
  }

  /** Session state changed. */
  private changed(): void {
    ++this.versionValue;
    this.schedule();
  }

  private keepBounds(): void {
    while (this.entries.length > this.limits.entries || (this.totalChars > this.limits.totalChars && this.entries.length > 1)) {
      const oldest = this.entries.shift()!;
      this.totalChars -= this.sizes.get(oldest.id) ?? 0;
      this.sizes.delete(oldest.id);
      this.messageIds.delete(oldest.id);
      this.dropped.entries++;
      if (oldest.kind === "tool") {
        this.tools.delete(oldest.toolCallId);
        if (oldest.question?.state === "pending") this.settle(oldest.question.questionId, { outcome: "cancelled" });
      }
    }
  }

  private schedule(): void {
    if (this.timer !== undefined) return;
    const delay = Math.max(0, this.lastEmit + this.coalesceMs - this.scheduler.now());
    this.timer = this.scheduler.setTimeout(() => this.emit(), delay);
  }

  private emit(): void {
    this.timer = undefined;
    this.lastEmit = this.scheduler.now();
    const version = this.versionValue;
    for (const l of [...this.listeners]) l(version);
  }
}

/** Characters an entry holds (text entries are most of the budget; the rest counts roughly). */
function entrySize(e: ChatEntry): number {
  switch (e.kind) {
    case "agent":
    case "thought":
      return e.markdown.length;
    case "user":
      return e.content.reduce((n, b) => n + shownChars(b), 0);
    case "tool":
      return e.title.length + toolContentChars(e.content) + e.locations.reduce((n, l) => n + l.path.length, 0);
    case "plan":
      return e.entries.reduce((n, p) => n + p.content.length, 0);
    case "notice":
      return e.title.length + (e.description?.length ?? 0);
    case "turnError":
      return e.message.length;
    case "exit":
      return e.stderrTail.reduce((n, l) => n + l.length, 0);
    default:
      return 0;
  }
}
