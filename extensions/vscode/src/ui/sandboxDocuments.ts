// Read-only documents of a sandbox's review, under the `lockroom-sandbox:` scheme:
//   lockroom-sandbox:/<workspace-relative path>?sandbox=<id>&view=<viewId>&side=base|current
// `current` is the sandbox's version of the file in that view, `base` the review's base (the
// snapshot, or what was last applied); a side without the file is an empty document. Each URI
// names its view, so a diff editor keeps showing — and its hunk actions keep deciding — exactly
// what the user is reading, whatever the list shows meanwhile. A third side, `yours`, holds a
// copy of the host file taken when a conflict is opened in the merge editor.
import * as vscode from "vscode";
import type { LockroomContext } from "./context.js";

export const kScheme = "lockroom-sandbox";

export type Side = "base" | "current" | "yours";

export interface SandboxDocRef {
  sandboxId: string;
  viewId: string;
  path: string;
  side: Side;
}

export function sandboxUri(ref: SandboxDocRef): vscode.Uri {
  const query = new URLSearchParams({ sandbox: ref.sandboxId, view: ref.viewId, side: ref.side }).toString();
  return vscode.Uri.from({ scheme: kScheme, path: "/" + ref.path, query });
}

export function parseSandboxUri(uri: vscode.Uri): SandboxDocRef | undefined {
  if (uri.scheme !== kScheme) return undefined;
  const q = new URLSearchParams(uri.query);
  const sandboxId = q.get("sandbox");
  const viewId = q.get("view");
  const side = q.get("side");
  if (!sandboxId || !viewId || (side !== "base" && side !== "current" && side !== "yours")) return undefined;
  return { sandboxId, viewId, path: uri.path.replace(/^\//, ""), side };
}

export class SandboxDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly yours = new Map<string, string>();
  private readonly registration: vscode.Disposable;

  constructor(private readonly ctx: LockroomContext) {
    this.registration = vscode.workspace.registerTextDocumentContentProvider(kScheme, this);
  }

  /** Keeps a copy of the host file for a merge editor's "yours" side; returns its URI. */
  keepYours(ref: Omit<SandboxDocRef, "side">, text: string): vscode.Uri {
    const uri = sandboxUri({ ...ref, side: "yours" });
    this.yours.set(uri.toString(), text);
    return uri;
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const ref = parseSandboxUri(uri);
    if (!ref) throw new Error(`not a lockroom sandbox document: ${uri.toString()}`);
    if (ref.side === "yours") return this.yours.get(uri.toString()) ?? "";
    await this.ctx.connect();
    const sides = await this.ctx.review(ref.sandboxId).sides(ref.path, ref.viewId);
    if (sides.binary) return `(binary file: ${ref.path} is not shown as text)`;
    return (ref.side === "base" ? sides.base : sides.current)?.toString("utf8") ?? "";
  }

  dispose(): void {
    this.registration.dispose();
  }
}
