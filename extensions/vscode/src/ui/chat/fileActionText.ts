// What "Apply file" and "Discard file" did to one file, in words for its row in the review card,
// from `_lockroom/apply`'s and `_lockroom/discard`'s results or their errors. Pure (no vscode).
import type { ChangesApplyResult, ChangesDiscardResult } from "../../protocol/generated.js";
import type { FileActionState } from "../../webview/chat/protocol.js";

export function applyResultState(result: ChangesApplyResult, path: string): FileActionState {
  if (result.mode !== "worktree") return { state: "failed", message: "lockroom answered with a branch instead of applying" };
  const file = result.files.find((f) => f.path === path) ?? (result.files.length === 1 ? result.files[0] : undefined);
  if (!file) return { state: "failed", message: "Not applied: lockroom had no change of this file to apply" };
  switch (file.status) {
    case "applied":
      return { state: "applied", message: "Applied to your file" };
    case "merged":
      return { state: "applied", message: "Applied, merged with your own edits" };
    case "unchanged":
      return { state: "applied", message: "Your file already has this version" };
    case "conflict":
      return { state: "failed", message: "Not applied: it conflicts with your own edits of this file (your file is unchanged)" };
    case "refused":
      return { state: "failed", message: `Not applied: ${file.reason ?? "lockroom refused it"}` };
    default:
      return { state: "failed", message: `Not applied (${String(file.status)})` };
  }
}

export function discardResultState(result: ChangesDiscardResult): FileActionState {
  return result.discarded > 0
    ? { state: "discarded", message: "Discarded in the sandbox (your file is unchanged)" }
    : { state: "failed", message: "Nothing to discard: the sandbox no longer has this change" };
}

export function errorState(action: "apply" | "discard", error: unknown): FileActionState {
  const message = error instanceof Error ? error.message : String(error);
  return { state: "failed", message: `${action === "apply" ? "Not applied" : "Not discarded"}: ${message}` };
}

/** lockroom's answer for a review view it no longer keeps (-32803 wrongState, "list again"). */
export function isStaleView(error: unknown): boolean {
  const message = error instanceof Error ? error.message : String(error);
  return /no longer kept/.test(message);
}
