// Opens a tool call's location (a host path from lockroom) in the editor: a file at its line
// (ACP lines are 1-based), a folder revealed in the Explorer. A path that is not on this machine
// (a guest path such as /tmp/x) is said so rather than opened.
import * as vscode from "vscode";

export async function openLocation(filePath: string, line: number | null): Promise<void> {
  const uri = vscode.Uri.file(filePath);
  let stat: vscode.FileStat;
  try {
    stat = await vscode.workspace.fs.stat(uri);
  } catch {
    void vscode.window.showWarningMessage(`${filePath} is not on this machine (it is a path inside the sandbox).`);
    return;
  }
  if (stat.type & vscode.FileType.Directory) {
    await vscode.commands.executeCommand("revealInExplorer", uri);
    return;
  }
  const at = line !== null && line > 0 ? new vscode.Position(line - 1, 0) : undefined;
  await vscode.window.showTextDocument(uri, { preview: true, ...(at ? { selection: new vscode.Range(at, at) } : {}) });
}
