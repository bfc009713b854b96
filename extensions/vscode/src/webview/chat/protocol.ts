// The messages between the chat view's webview (main.ts) and the extension (ui/chat/chatView.ts),
// in both directions, and the check the extension runs on what the webview sends.
//
// Extension → webview (ToWebview):
//   init       on every `ready`: the agents to offer, the one to preselect, the workspace folder,
//              the phase (idle / starting / running / ended / failed) and the per-file results
//              of "Apply file" / "Discard file". A `snapshot` follows when a chat exists.
//   phase      the phase changed (a start began, finished or failed; the chat ended).
//   agents     the agent list changed (the lockroom.agents setting).
//   snapshot   the whole transcript (ChatModel.snapshot()); replaces what the webview holds.
//   patch      ChatModel.changesSince(v) where v is the version the last snapshot/patch gave;
//              a webview at another version asks for a snapshot again (`resync`).
//   fileActions the per-file results, whole (small).
//   focus      focus the prompt box (New Agent Chat).
// Webview → extension (FromWebview), all checked by parseFromWebview():
//   ready                       loaded (again): send init and the transcript
//   resync                      a patch did not fit: send a snapshot
//   start {agent}               start the named agent
//   cancelStart                 stop a start in progress
//   prompt {text}               send a prompt
//   cancel                      stop the running turn
//   answer {questionId, optionId}  a permission question's option
//   setMode {modeId}
//   openLink {href}             a link of the agent's markdown (only http/https are opened)
//   openFile {path, line}       a tool call's location (a host path)
//   openDiff {entryId, index}   the diff content item `index` of tool entry `entryId`
//   fileAction {entryId, path, action}  apply or discard one file of a kept review
//   command {name}              newChat | openAgentSettings | openPathSetting | showLog |
//                               openFolder | doctor
// Types only (plus the parser): the webview bundles it, the extension imports it.
import type { ChatPatch, ChatSnapshot } from "../../core/acp/chatTypes.js";

/** An agent as the picker shows it. */
export interface AgentChoice {
  name: string;
  /** A short line: kits and command. */
  detail: string;
}

/** Something the user can do about a problem: a button. */
export interface ProblemAction {
  label: string;
  command: CommandName | "retry";
}

/** A start that failed, told for the user: what happened and what to do. */
export interface Problem {
  title: string;
  detail: string;
  hint: string | null;
  actions: ProblemAction[];
}

export type Phase =
  | { state: "idle" }
  | { state: "starting"; agent: string; startedAt: number }
  | { state: "running"; agent: string }
  | { state: "ended"; agent: string }
  | { state: "failed"; agent: string; problem: Problem };

/** The result of "Apply file" / "Discard file" on one file of a review. */
export interface FileActionState {
  state: "working" | "applied" | "discarded" | "failed";
  message: string;
}

/** Keyed by fileActionKey(entryId, path). */
export type FileActions = Record<string, FileActionState>;

export function fileActionKey(entryId: number, path: string): string {
  return `${entryId}:${path}`;
}

export type ToWebview =
  | { type: "init"; agents: AgentChoice[]; selectedAgent: string | null; workspace: string | null; phase: Phase; fileActions: FileActions }
  | { type: "phase"; phase: Phase }
  | { type: "agents"; agents: AgentChoice[]; selectedAgent: string | null }
  | { type: "snapshot"; snapshot: ChatSnapshot }
  | { type: "patch"; patch: ChatPatch }
  | { type: "fileActions"; fileActions: FileActions }
  | { type: "focus" };

export const commandNames = ["newChat", "openAgentSettings", "openPathSetting", "showLog", "openFolder", "doctor"] as const;
export type CommandName = (typeof commandNames)[number];

export type FromWebview =
  | { type: "ready" }
  | { type: "resync" }
  | { type: "start"; agent: string }
  | { type: "cancelStart" }
  | { type: "prompt"; text: string }
  | { type: "cancel" }
  | { type: "answer"; questionId: string; optionId: string }
  | { type: "setMode"; modeId: string }
  | { type: "openLink"; href: string }
  | { type: "openFile"; path: string; line: number | null }
  | { type: "openDiff"; entryId: number; index: number }
  | { type: "fileAction"; entryId: number; path: string; action: "apply" | "discard" }
  | { type: "command"; name: CommandName };

/** The longest prompt accepted from the webview (characters). */
export const maxPromptChars = 1_000_000;
const maxStringChars = 64 * 1024;

/** `value` as a FromWebview when it is one exactly (right fields, types, sizes); undefined otherwise. */
export function parseFromWebview(value: unknown): FromWebview | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const m = value as Record<string, unknown>;
  const str = (key: string, max = maxStringChars): string | undefined => {
    const v = m[key];
    return typeof v === "string" && v.length > 0 && v.length <= max ? v : undefined;
  };
  const int = (key: string): number | undefined => {
    const v = m[key];
    return typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : undefined;
  };
  switch (m.type) {
    case "ready":
    case "resync":
    case "cancelStart":
    case "cancel":
      return { type: m.type };
    case "start": {
      const agent = str("agent");
      return agent === undefined ? undefined : { type: "start", agent };
    }
    case "prompt": {
      const text = str("text", maxPromptChars);
      return text === undefined || !text.trim() ? undefined : { type: "prompt", text };
    }
    case "answer": {
      const questionId = str("questionId");
      const optionId = str("optionId");
      return questionId === undefined || optionId === undefined ? undefined : { type: "answer", questionId, optionId };
    }
    case "setMode": {
      const modeId = str("modeId");
      return modeId === undefined ? undefined : { type: "setMode", modeId };
    }
    case "openLink": {
      const href = str("href");
      return href === undefined ? undefined : { type: "openLink", href };
    }
    case "openFile": {
      const path = str("path");
      const line = m.line === null ? null : int("line");
      return path === undefined || line === undefined ? undefined : { type: "openFile", path, line };
    }
    case "openDiff": {
      const entryId = int("entryId");
      const index = int("index");
      return entryId === undefined || index === undefined ? undefined : { type: "openDiff", entryId, index };
    }
    case "fileAction": {
      const entryId = int("entryId");
      const path = str("path");
      const action = m.action;
      if (entryId === undefined || path === undefined || (action !== "apply" && action !== "discard")) return undefined;
      return { type: "fileAction", entryId, path, action };
    }
    case "command": {
      const name = commandNames.find((n) => n === m.name);
      return name === undefined ? undefined : { type: "command", name };
    }
    default:
      return undefined;
  }
}

/** Only http and https links of the agent's text are opened (in the browser). */
export function isOpenableLink(href: string): boolean {
  try {
    const url = new URL(href);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
}
