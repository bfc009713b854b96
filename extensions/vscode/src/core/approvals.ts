// Network approvals: lockroom's `network/approve` request turned into a question a person can
// answer with buttons, and their answer turned back into the protocol's decision. lockroom holds
// the guest's connection while it waits and gives up at `deadline` (it then cancels the request);
// the question is withdrawn at that moment, so no button answers a request that is gone.
import type { LockroomClient } from "./client.js";
import type { NetworkApproveParams, NetworkApproveResult } from "../protocol/generated.js";

export type Decision = NetworkApproveResult["decision"];

export interface ApprovalChoice {
  decision: Decision;
  label: string;
}

export interface ApprovalQuestion {
  params: NetworkApproveParams;
  /** One line: who wants to reach what (lockroom's `reason` is in params, for a log). */
  message: string;
  /** The buttons, in the order lockroom offers them. */
  choices: ApprovalChoice[];
  /** Milliseconds left until lockroom stops waiting. */
  remainingMs: number;
}

/** Shows the question and resolves with the chosen decision (undefined: dismissed); `signal` aborts when the question is withdrawn. */
export type Asker = (question: ApprovalQuestion, signal: AbortSignal) => Promise<Decision | undefined>;

// Short: a notification shows four buttons in one row.
const labels: Record<Decision, string> = {
  allowOnce: "Allow once",
  allowSandbox: "Allow in sandbox",
  allowHost: "Allow host",
  deny: "Deny",
};

export function describeQuestion(p: NetworkApproveParams, sandboxName?: string): string {
  const who = p.process ? `${p.process.command.split(" ")[0]} (pid ${p.process.pid})` : "A program";
  const where = sandboxName ?? p.sandboxId;
  const what = p.method && p.path ? ` (${p.method} ${p.path})` : "";
  return `${who} in ${where} wants to reach ${p.host}:${p.port} over ${p.scheme}${what}.`;
}

export function questionOf(p: NetworkApproveParams, now = Date.now(), sandboxName?: string): ApprovalQuestion {
  const deadline = Date.parse(p.deadline);
  const remainingMs = Number.isFinite(deadline) ? Math.max(0, deadline - now) : p.timeoutMs;
  return {
    params: p,
    message: describeQuestion(p, sandboxName),
    choices: p.options.map((decision) => ({ decision, label: labels[decision] })),
    remainingMs,
  };
}

/**
 * Answers `network/approve` on `client` by asking `ask`. A dismissed question is a deny; the
 * question is withdrawn (its signal aborted) when lockroom cancels or the deadline passes.
 */
export function serveApprovals(client: LockroomClient, ask: Asker, sandboxName?: (sandboxId: string) => string | undefined): () => void {
  return client.handle("network/approve", async (params, cancelled) => {
    const question = questionOf(params, Date.now(), sandboxName?.(params.sandboxId));
    const withdraw = new AbortController();
    const timer = setTimeout(() => withdraw.abort(), question.remainingMs);
    const onCancel = () => withdraw.abort();
    cancelled.addEventListener("abort", onCancel, { once: true });
    try {
      const decision = await Promise.race([
        ask(question, withdraw.signal),
        new Promise<undefined>((resolve) => withdraw.signal.addEventListener("abort", () => resolve(undefined), { once: true })),
      ]);
      return { decision: decision && params.options.includes(decision) ? decision : "deny" };
    } finally {
      clearTimeout(timer);
      cancelled.removeEventListener("abort", onCancel);
      withdraw.abort();
    }
  });
}
