// Agent definitions for the chat panel: which ACP agent to run behind `lockroom acp`, with which
// kits and network. The built-in ones use the built-in kits (`claude`, `codex`); the user's come
// from a settings array, validated entry by entry (an entry with a problem is not offered, and
// the problem says which entry and what is wrong). `lockroomAcpArgs` gives the command line.
// No vscode import: the extension reads the setting and passes its value here.

export interface AgentDefinition {
  /** Shown in the agent picker; unique. A settings entry with a built-in's name replaces it. */
  name: string;
  /** `--kit` for each (a kit name, or a path to a kit file); the agent's program comes from them. */
  kits: string[];
  /** The ACP agent's command line in the guest, after `--`. */
  argv: string[];
  /** `--allow HOST[:PORT]` for each: hosts the sandbox may reach besides the kits' rules. */
  allow?: string[];
  /**
   * `-e NAME=VALUE` for each: the agent's environment in the guest. These are on lockroom's
   * command line, so not for secrets: API keys stay in the editor's environment and reach the
   * model's host through the kit's `secrets` (lockroom's egress proxy injects them).
   */
  env?: Record<string, string>;
  /** `--no-network`: no way out at all. */
  noNetwork?: boolean;
  /**
   * The command for *Run Agent in Terminal* (a pty in a sandbox with the same kits), when it is
   * not `argv` — an ACP adapter's own CLI, e.g. `["claude"]` beside `["claude-agent-acp"]`.
   */
  terminalArgv?: string[];
}

/** The built-in kits' agents (kits/claude, kits/codex). */
export const builtInAgents: readonly AgentDefinition[] = Object.freeze([
  { name: "Claude Code", kits: ["claude"], argv: ["claude-agent-acp"] },
  { name: "Codex", kits: ["codex"], argv: ["codex-acp"] },
]);

/** A settings entry that is not offered, and why. */
export interface AgentProblem {
  /** The entry's index in the settings array. */
  index: number;
  /** Its name, when it has a usable one. */
  name?: string;
  /** A whole sentence for the user, naming the setting, the entry and the problem. */
  message: string;
}

export interface AgentList {
  /** The built-ins (unless replaced), then the valid settings entries in their order. */
  agents: AgentDefinition[];
  problems: AgentProblem[];
}

const knownKeys = ["name", "kits", "argv", "allow", "env", "noNetwork", "terminalArgv"];

/**
 * The agents to offer: the built-ins and the valid entries of `settingValue` (the setting's raw
 * value; undefined or null is no entries). `settingName` is how messages name the setting.
 */
export function agentsFromSettings(settingValue: unknown, settingName = "lockroom.agents"): AgentList {
  const problems: AgentProblem[] = [];
  const fromSettings: AgentDefinition[] = [];
  if (settingValue !== undefined && settingValue !== null && !Array.isArray(settingValue)) {
    problems.push({ index: -1, message: `${settingName} must be a list of agents; it is ${describe(settingValue)}, so no agent of yours is offered.` });
  } else {
    const names = new Set<string>();
    (settingValue ?? []).forEach((entry: unknown, index: number) => {
      const checked = checkEntry(entry);
      const name = isObject(entry) && typeof entry.name === "string" && entry.name.trim() ? entry.name.trim() : undefined;
      const where = `${settingName}[${index}]${name ? ` ("${name}")` : ""}`;
      let reasons = checked.problems;
      if (checked.agent && names.has(checked.agent.name)) reasons = [`another entry before it is already named "${checked.agent.name}"`];
      if (reasons.length || !checked.agent) {
        problems.push({ index, ...(name ? { name } : {}), message: `${where} is not offered: ${reasons.join("; ")}.` });
        return;
      }
      names.add(checked.agent.name);
      fromSettings.push(checked.agent);
    });
  }
  const replaced = new Set(fromSettings.map((a) => a.name));
  const agents = [...builtInAgents.filter((a) => !replaced.has(a.name)).map(copy), ...fromSettings];
  return { agents, problems };
}

/** One entry: the definition, or every problem with it (several at once, so one fix round does). */
export function checkEntry(entry: unknown): { agent?: AgentDefinition; problems: string[] } {
  if (!isObject(entry)) return { problems: [`an agent must be an object with "name" and "argv", not ${describe(entry)}`] };
  const problems: string[] = [];
  for (const key of Object.keys(entry))
    if (!knownKeys.includes(key)) problems.push(`"${key}" is not a field of an agent (the fields are ${knownKeys.join(", ")})`);

  const name = typeof entry.name === "string" ? entry.name.trim() : "";
  if (!name) problems.push(`"name" must be a non-empty string`);

  const argv = entry.argv;
  if (!Array.isArray(argv) || argv.length === 0 || !argv.every((a) => typeof a === "string" && a.length > 0))
    problems.push(`"argv" must be the agent's command line in the guest, a non-empty list of non-empty strings (e.g. ["python3", "/opt/agent.py"])`);

  const kits = entry.kits ?? [];
  if (!Array.isArray(kits)) problems.push(`"kits" must be a list of kit names`);
  else for (const k of kits) if (!validKit(k)) problems.push(`kit ${JSON.stringify(k)} is not a kit name (lower-case letters, digits and '-') or a path to a kit file`);

  const allow = entry.allow ?? [];
  if (!Array.isArray(allow)) problems.push(`"allow" must be a list of HOST or HOST:PORT`);
  else for (const h of allow) if (!validAllow(h)) problems.push(`"allow" entry ${JSON.stringify(h)} is not HOST or HOST:PORT (a port from 1 to 65535; [IPv6]:PORT)`);

  const env = entry.env ?? {};
  if (!isObject(env)) problems.push(`"env" must be an object of NAME: "value" strings`);
  else
    for (const [k, v] of Object.entries(env)) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) problems.push(`"env" name ${JSON.stringify(k)} is not a variable name (letters, digits and _, not starting with a digit)`);
      if (typeof v !== "string") problems.push(`"env" value of ${k} must be a string, not ${describe(v)}`);
    }

  const terminalArgv = entry.terminalArgv;
  if (terminalArgv !== undefined && (!Array.isArray(terminalArgv) || terminalArgv.length === 0 || !terminalArgv.every((a) => typeof a === "string" && a.length > 0)))
    problems.push(`"terminalArgv" must be a non-empty list of non-empty strings (the command for Run Agent in Terminal)`);

  const noNetwork = entry.noNetwork ?? false;
  if (typeof noNetwork !== "boolean") problems.push(`"noNetwork" must be true or false`);
  else if (noNetwork && Array.isArray(allow) && allow.length > 0) problems.push(`"noNetwork" and "allow" contradict each other: with noNetwork there is no way out at all`);

  if (problems.length) return { problems };
  const agent: AgentDefinition = { name, kits: [...(kits as string[])], argv: [...(argv as string[])] };
  if ((allow as string[]).length) agent.allow = [...(allow as string[])];
  if (Object.keys(env).length) agent.env = { ...(env as Record<string, string>) };
  if (noNetwork) agent.noNetwork = true;
  if (terminalArgv !== undefined) agent.terminalArgv = [...(terminalArgv as string[])];
  return { agent, problems };
}

/**
 * The arguments of `lockroom acp` for `agent` (after any global options such as --log-level);
 * `acpOptions` (e.g. `--shared`) go right after `acp`.
 */
export function lockroomAcpArgs(agent: AgentDefinition, acpOptions: string[] = []): string[] {
  const args = ["acp", ...acpOptions];
  for (const kit of agent.kits) args.push("--kit", kit);
  for (const host of agent.allow ?? []) args.push("--allow", host);
  if (agent.noNetwork) args.push("--no-network");
  for (const [name, value] of Object.entries(agent.env ?? {})) args.push("-e", `${name}=${value}`);
  args.push("--", ...agent.argv);
  return args;
}

/**
 * The options of `lockroom acp` for the chat: `--shared`, so its sandbox lives in the same
 * per-user server as the window's own `lockroom serve` (and survives a reload), and the server
 * folder when the serve arguments (`lockroom.serverArgs`) name one.
 */
export function sharedAcpOptions(serverArgs: string[]): string[] {
  const out = ["--shared"];
  for (let i = 0; i < serverArgs.length; i++) {
    const a = serverArgs[i]!;
    if (a === "--server-dir" && i + 1 < serverArgs.length) out.push(a, serverArgs[++i]!);
    else if (a.startsWith("--server-dir=")) out.push(a);
  }
  return out;
}

/** lockroom's rule: a kit name (kits/kit_spec.cpp) or a path to a kit file (one with '/' or a YAML suffix). */
function validKit(k: unknown): boolean {
  if (typeof k !== "string" || !k || k.startsWith("-")) return false;
  if (k.includes("/") || k.endsWith(".yaml") || k.endsWith(".yml")) return true;
  return k.length <= 64 && /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/.test(k);
}

function validAllow(h: unknown): boolean {
  if (typeof h !== "string") return false;
  const v6 = /^\[([0-9A-Fa-f:.]+)\](?::(\d{1,5}))?$/.exec(h);
  const plain = /^([A-Za-z0-9*](?:[A-Za-z0-9.*-]*[A-Za-z0-9])?)(?::(\d{1,5}))?$/.exec(h);
  const match = v6 ?? plain;
  if (!match) return false;
  const port = match[2];
  return port === undefined || (Number(port) >= 1 && Number(port) <= 65535);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function describe(v: unknown): string {
  if (Array.isArray(v)) return "a list";
  if (v === null) return "null";
  return typeof v === "string" ? `the string ${JSON.stringify(v)}` : `${typeof v === "object" ? "an" : "a"} ${typeof v}`;
}

function copy(a: AgentDefinition): AgentDefinition {
  return { ...a, kits: [...a.kits], argv: [...a.argv] };
}
