// A failed agent start told for the user: what went wrong and what to do, with buttons. Pure (no
// vscode): it reads the error's message as lockroom and AgentConnection word it — the binary not
// found, a kit that does not exist, a secret's environment variable not set, QEMU or KVM trouble —
// and falls back to lockroom's own words and its log.
import type { Problem } from "../../webview/chat/protocol.js";

export interface StartContext {
  /** The lockroom binary as configured. */
  lockroomPath: string;
  agentName: string;
}

/** The Problem for a start that failed with `message`. */
export function describeStartError(message: string, ctx: StartContext): Problem {
  const notFound = /^cannot start .*?: (?:spawn .* )?(ENOENT|EACCES|ENOTDIR)\b/.exec(message);
  if (notFound) {
    const why = notFound[1] === "EACCES" ? "is not executable" : "was not found";
    return {
      title: "lockroom was not found",
      detail: `The lockroom binary “${ctx.lockroomPath}” ${why}.`,
      hint: "Set the lockroom.path setting to the lockroom binary: a full path, or a name on PATH.",
      actions: [
        { label: "Open lockroom.path Setting", command: "openPathSetting" },
        { label: "Try Again", command: "retry" },
      ],
    };
  }
  const kit = /no kit named "([^"]+)"/.exec(message);
  if (kit) {
    return {
      title: `The kit “${kit[1]}” does not exist`,
      detail: `lockroom has no kit named “${kit[1]}”.`,
      hint: `${ctx.agentName} names a kit lockroom does not have. Check its kits in the lockroom.agents setting; \`lockroom kit ls\` lists the kits there are.`,
      actions: [
        { label: "Open Agent Settings", command: "openAgentSettings" },
        { label: "Show Log", command: "showLog" },
      ],
    };
  }
  const secret = /environment variable ([A-Za-z_][A-Za-z0-9_]*) is not set/.exec(message);
  if (secret) {
    return {
      title: `${secret[1]} is not set`,
      detail: `${ctx.agentName} needs the environment variable ${secret[1]} (its API key).`,
      hint: `Set ${secret[1]} in the environment VS Code starts from (e.g. your shell profile) and restart VS Code. The key stays on this machine: lockroom adds it to the agent's requests on their way out, and the sandbox never sees it.`,
      actions: [
        { label: "Try Again", command: "retry" },
        { label: "Show Log", command: "showLog" },
      ],
    };
  }
  if (/\b(kvm|qemu)\b/i.test(message)) {
    return {
      title: `${ctx.agentName} did not start: the sandbox could not run`,
      detail: firstLine(message),
      hint: "lockroom needs QEMU, and KVM for speed. “lockroom: Check This Machine (doctor)” says what is missing.",
      actions: [
        { label: "Check This Machine", command: "doctor" },
        { label: "Show Log", command: "showLog" },
        { label: "Try Again", command: "retry" },
      ],
    };
  }
  return {
    title: `${ctx.agentName} did not start`,
    detail: firstLine(message),
    hint: "The lockroom output channel has lockroom's log of the start.",
    actions: [
      { label: "Show Log", command: "showLog" },
      { label: "Try Again", command: "retry" },
    ],
  };
}

/** The problem when no folder is open. */
export const noFolderProblem: Problem = {
  title: "Open a folder first",
  detail: "The agent works on a copy of a folder in its sandbox.",
  hint: null,
  actions: [{ label: "Open Folder", command: "openFolder" }],
};

function firstLine(text: string): string {
  const line = text.split("\n").find((l) => l.trim()) ?? text;
  return line.length > 500 ? `${line.slice(0, 500)}…` : line;
}
