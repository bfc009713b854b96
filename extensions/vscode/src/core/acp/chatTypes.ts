// The chat transcript as plain JSON: what ChatModel (chatModel.ts) builds from an ACP session and
// what the chat panel's webview renders. Nothing here holds functions, class instances or
// undefined-vs-missing distinctions that JSON would lose; entries are identified by `id`, which
// only grows, and carry the model `version` at which they last changed (see ChatPatch).
import type * as acp from "@agentclientprotocol/sdk";

/** A piece of a user message (or of an agent's resource), without binary data. */
export type ShownBlock =
  | { type: "text"; text: string }
  | { type: "link"; uri: string; name: string }
  | { type: "resource"; uri: string; text: string | null; mimeType: string | null }
  | { type: "image"; mimeType: string; uri: string | null }
  | { type: "audio"; mimeType: string };

/** One item of a tool call's content. */
export type ToolContent =
  /** Text (a content block as markdown; lockroom's terminal output is text too). */
  | { type: "text"; text: string; truncatedChars?: number }
  /**
   * A file change. `oldText` null is a new file. When the diff was too large for the model,
   * `omittedChars` says how much was dropped and both texts are null (`isNewFile` still tells).
   */
  | { type: "diff"; path: string; oldText: string | null; newText: string | null; isNewFile: boolean; omittedChars?: number }
  /** A terminal the editor cannot show (lockroom replaces them with text; kept for other agents). */
  | { type: "terminal"; terminalId: string };

/** A permission question on a tool call (an agent's, lockroom's review, or a network approval). */
export interface PermissionQuestion {
  questionId: string;
  options: { optionId: string; name: string; kind: acp.PermissionOptionKind }[];
  /** pending until answered; `selected` names the option; `cancelled` when withdrawn or cancelled. */
  state: "pending" | "selected" | "cancelled";
  optionId?: string;
}

/** lockroom's end-of-turn review (a tool call `lockroom-review-N`), from its rawInput and final update. */
export interface ReviewInfo {
  sandboxId: string | null;
  viewId: string | null;
  /** Workspace-relative paths of the files it offers. */
  files: string[];
  /** lockroom's last word on it: "Applied 2 files…", or why not (conflicts named), once it ended. */
  outcome: string | null;
}

interface EntryBase {
  /** Unique, increasing in transcript order. */
  id: number;
  /** The model version at which this entry last changed. */
  version: number;
}

export interface UserEntry extends EntryBase {
  kind: "user";
  content: ShownBlock[];
  truncatedChars?: number;
}

/** Agent message or thought text: consecutive chunks concatenated, markdown. */
export interface TextEntry extends EntryBase {
  kind: "agent" | "thought";
  markdown: string;
  /** Characters dropped at the end (the cap per entry). */
  truncatedChars?: number;
}

export interface ToolEntry extends EntryBase {
  kind: "tool";
  toolCallId: string;
  title: string;
  toolKind: acp.ToolKind;
  status: acp.ToolCallStatus;
  locations: { path: string; line: number | null }[];
  content: ToolContent[];
  /** Content items beyond the cap per entry, not kept. */
  droppedContent?: number;
  /** Set on lockroom's review tool call. */
  review?: ReviewInfo;
  /** The latest permission question on this tool call. */
  question?: PermissionQuestion;
}

export interface PlanEntry extends EntryBase {
  kind: "plan";
  entries: { content: string; priority: acp.PlanEntryPriority; status: acp.PlanEntryStatus }[];
}

export interface ModeEntry extends EntryBase {
  kind: "mode";
  modeId: string;
  /** The mode's name when the session listed it. */
  name: string | null;
}

export interface NoticeEntry extends EntryBase {
  kind: "notice";
  severity: string;
  title: string;
  description: string | null;
}

export interface TurnEndEntry extends EntryBase {
  kind: "turnEnd";
  stopReason: acp.StopReason;
}

export interface TurnErrorEntry extends EntryBase {
  kind: "turnError";
  message: string;
}

/** The lockroom acp process ended. */
export interface ExitEntry extends EntryBase {
  kind: "exit";
  code: number | null;
  signal: string | null;
  /** Its last stderr lines. */
  stderrTail: string[];
  /** True when the editor closed it. */
  expected: boolean;
}

export type ChatEntry = UserEntry | TextEntry | ToolEntry | PlanEntry | ModeEntry | NoticeEntry | TurnEndEntry | TurnErrorEntry | ExitEntry;

/** What the session offers and where it stands (latest values replace earlier ones). */
export interface ChatSessionState {
  /** A turn is running (from the user's message to its turn end or error). */
  busy: boolean;
  /** The process ended: nothing more can be sent. */
  ended: boolean;
  modes: { currentModeId: string; availableModes: { id: string; name: string; description: string | null }[] } | null;
  configOptions: acp.SessionConfigOption[];
  commands: { name: string; description: string; hint: string | null }[];
  title: string | null;
  usage: { used: number; size: number } | null;
}

/** What the model dropped to stay bounded (see chatModel.ts for the limits). */
export interface DroppedCounts {
  /** Oldest entries removed (entry count cap or total text cap). */
  entries: number;
  /** session/update kinds this model does not show (compaction, unknown kinds). */
  ignoredUpdates: number;
}

/** The whole state. */
export interface ChatSnapshot {
  version: number;
  entries: ChatEntry[];
  session: ChatSessionState;
  /** Questions waiting for the user, oldest first, with the entry each belongs to. */
  pendingQuestions: { questionId: string; entryId: number }[];
  dropped: DroppedCounts;
}

/**
 * What changed after version `since`: each entry whose `version` is newer, whole, in id order
 * (new ones have ids above every id the receiver holds); entries with an id below
 * `firstEntryId` are gone. `session`, `pendingQuestions` and `dropped` are always the current
 * values (small). Applying a patch to a state at `since` gives the snapshot at `version`.
 */
export interface ChatPatch {
  since: number;
  version: number;
  firstEntryId: number;
  entries: ChatEntry[];
  session: ChatSessionState;
  pendingQuestions: { questionId: string; entryId: number }[];
  dropped: DroppedCounts;
}
