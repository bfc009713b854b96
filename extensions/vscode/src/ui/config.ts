// The extension's settings (`lockroom.*` in package.json), read in one place.
import * as vscode from "vscode";
import type { Rule, SandboxCreateParams } from "../protocol/generated.js";

export interface LockroomSettings {
  path: string;
  kits: string[];
  cpus: number;
  memoryMiB: number;
  allow: string[];
  ask: boolean;
  serverArgs: string[];
}

export function settings(): LockroomSettings {
  const c = vscode.workspace.getConfiguration("lockroom");
  return {
    path: c.get<string>("path", "lockroom") || "lockroom",
    kits: c.get<string[]>("kits", []),
    cpus: c.get<number>("resources.cpus", 2),
    memoryMiB: c.get<number>("resources.memoryMiB", 1024),
    allow: c.get<string[]>("network.allow", []),
    ask: c.get<boolean>("network.ask", true),
    serverArgs: c.get<string[]>("serverArgs", []),
  };
}

/** `host` or `host:port` → a policy rule. */
export function allowRule(spec: string): Rule {
  const m = /^(.*?)(?::(\d+))?$/.exec(spec.trim())!;
  return { action: "allow", host: m[1]!, ...(m[2] ? { ports: [Number(m[2])] } : {}), name: "settings" };
}

/** The sandbox/create params for this workspace from the settings (kits may be overridden). */
export function createParams(workspace: string | undefined, kits: string[], s = settings()): SandboxCreateParams {
  return {
    ...(workspace ? { workspace } : {}),
    kits,
    resources: { cpus: s.cpus, memoryMiB: s.memoryMiB },
    network: { rules: s.allow.map(allowRule), unmatched: s.ask ? "ask" : "deny" },
    label: workspace ? `VS Code: ${workspace.split("/").at(-1)}` : "VS Code",
  };
}
