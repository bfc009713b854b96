// The chat view's HTML: an empty #app that the bundled script (dist/webview/chat.js) fills, its
// stylesheet, and a strict Content-Security-Policy — no inline styles or scripts but the one
// script with this load's nonce, images only from the extension or data: URLs, nothing remote.
import { randomBytes } from "node:crypto";
import * as vscode from "vscode";

export function chatHtml(webview: vscode.Webview, extensionUri: vscode.Uri): string {
  const nonce = randomBytes(18).toString("base64");
  const asset = (name: string) => webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, "dist", "webview", name)).toString();
  const csp = [
    "default-src 'none'",
    `style-src ${webview.cspSource}`,
    `font-src ${webview.cspSource}`,
    `img-src ${webview.cspSource} data:`,
    `script-src 'nonce-${nonce}'`,
  ].join("; ");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="${asset("chat.css")}">
<title>Agent</title>
</head>
<body>
<div id="app"></div>
<script nonce="${nonce}" src="${asset("chat.js")}"></script>
</body>
</html>`;
}
