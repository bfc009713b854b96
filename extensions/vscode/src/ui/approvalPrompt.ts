// Network approvals as VS Code notifications: the question with one button per decision. A
// notification cannot be closed by code, so when lockroom stops waiting the question's buttons
// are answered for the user as "dismissed" (deny) and a short note says the time ran out.
import * as vscode from "vscode";
import type { Asker } from "../core/approvals.js";

export const askInNotification: Asker = async (question, signal) => {
  const seconds = Math.round(question.remainingMs / 1000);
  const pick = vscode.window.showWarningMessage(
    `lockroom: ${question.message} (answer within ${seconds} s)`,
    ...question.choices.map((c) => c.label),
  );
  const withdrawn = new Promise<undefined>((resolve) => signal.addEventListener("abort", () => resolve(undefined), { once: true }));
  const label = await Promise.race([pick, withdrawn]);
  if (signal.aborted && label === undefined) {
    void vscode.window.setStatusBarMessage(`lockroom: no answer in time for ${question.params.host}:${question.params.port}; denied`, 8000);
    return undefined;
  }
  return question.choices.find((c) => c.label === label)?.decision;
};
