// `lockroom doctor` from VS Code: the human report in the output channel, and one message that
// says whether sandboxes can run here and, if not or if slow, what to do.
import { execFile } from "node:child_process";
import * as vscode from "vscode";
import { settings } from "../config.js";
import type { LockroomContext } from "../context.js";

interface DoctorJson {
  ready?: boolean;
  accel?: { choice?: string; reason?: string };
  qemu?: { path?: string | null; microvm?: boolean };
}

function run(bin: string, args: string[]): Promise<{ stdout: string; stderr: string; error?: Error }> {
  return new Promise((resolve) =>
    execFile(bin, args, { timeout: 60_000, maxBuffer: 4 << 20 }, (error, stdout, stderr) => resolve({ stdout, stderr, ...(error ? { error } : {}) })),
  );
}

/** The one-line verdict for a doctor --json answer. */
export function verdict(d: DoctorJson): { level: "info" | "warning" | "error"; text: string } {
  if (!d.ready) return { level: "error", text: "This machine cannot run lockroom sandboxes yet: see the report in the lockroom output for what is missing and how to install it." };
  if (d.accel?.choice === "tcg") return { level: "warning", text: `Sandboxes run here, but slowly: no usable KVM, so guests are emulated (TCG). ${d.accel.reason ?? ""}`.trim() };
  return { level: "info", text: "This machine can run lockroom sandboxes with KVM." };
}

export function registerDoctorCommand(ctx: LockroomContext): vscode.Disposable {
  return vscode.commands.registerCommand("lockroom.doctor", async () => {
    const bin = settings().path;
    const [human, json] = await Promise.all([run(bin, ["doctor"]), run(bin, ["doctor", "--json"])]);
    if (human.error && !human.stdout) {
      void vscode.window.showErrorMessage(`lockroom: cannot run ${bin}: ${human.error.message}. Install lockroom, or set the lockroom.path setting to its binary.`, "Open Settings").then((c) => {
        if (c) void vscode.commands.executeCommand("workbench.action.openSettings", "lockroom.path");
      });
      return;
    }
    ctx.log.appendLine(human.stdout.trimEnd());
    let d: DoctorJson = {};
    try {
      d = JSON.parse(json.stdout) as DoctorJson;
    } catch {
      d = { ready: !human.error };
    }
    const v = verdict(d);
    const show = v.level === "error" ? vscode.window.showErrorMessage : v.level === "warning" ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
    const choice = await show(`lockroom: ${v.text}`, "Show Report");
    if (choice) ctx.log.show();
  });
}
