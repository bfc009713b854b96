// Read-only documents for the chat's "Open diff": each side of a change (a diff item of a tool
// call or of lockroom's review) is served on the `lockroom-chat:` scheme under the file's own
// path (so the editor picks its language), told apart by a query naming the opening and the side.
// The texts of the last few diffs opened are kept; an older tab reloaded says it is gone.
import * as path from "node:path";
import * as vscode from "vscode";

export const chatDiffScheme = "lockroom-chat";
const keptDiffs = 20;

export class DiffDocuments implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private opened = 0;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.query) ?? "This change is no longer available: open its diff again from the Agent view.";
  }

  /** Opens VS Code's diff editor between `oldText` (empty for a new file) and `newText`. */
  async open(filePath: string, oldText: string | null, newText: string | null, label: string): Promise<void> {
    const n = ++this.opened;
    const left = vscode.Uri.from({ scheme: chatDiffScheme, path: filePath, query: `${n}-before` });
    const right = vscode.Uri.from({ scheme: chatDiffScheme, path: filePath, query: `${n}-after` });
    this.texts.set(left.query, oldText ?? "");
    this.texts.set(right.query, newText ?? "");
    for (const key of [...this.texts.keys()]) if (Number(key.split("-")[0]) <= n - keptDiffs) this.texts.delete(key);
    await vscode.commands.executeCommand("vscode.diff", left, right, `${path.basename(filePath)} (${label})`, { preview: true });
  }
}
