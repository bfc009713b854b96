// The Agent view (`lockroom.chat`): a webview chat with one ACP agent at a time, run by
// `lockroom acp` in a sandbox on the workspace folder. This file wires it up: the view provider
// (HTML, the webview's messages checked by protocol.ts and dispatched), the `lockroom.chat.new`
// command (ends the chat, after asking when the agent is working or changes would be lost), the
// `lockroom-chat:` documents behind "Open diff", and sending the webview the phase and the
// transcript — a snapshot whenever it (re)loads (the view does not keep its webview while
// hidden), patches after. ChatRun (chatRun.ts) owns the chat itself. The chat's sandbox is
// shown in Source Control while it runs, and remembered in the workspace state so that the
// next window (a reload) resumes the chat on it; ending the chat forgets it.
import * as vscode from "vscode";
import { ChatRun } from "./chatRun.js";
import { AgentChoices } from "./agentChoices.js";
import { chatHtml } from "./chatHtml.js";
import { chatDiffScheme, DiffDocuments } from "./diffDocuments.js";
import { openLocation } from "./openLocation.js";
import { noFolderProblem } from "./startProblems.js";
import { isOpenableLink, parseFromWebview, type CommandName, type FromWebview, type Phase, type ToWebview } from "../../webview/chat/protocol.js";
import { displayPath, unappliedReviewFiles } from "../../webview/chat/present.js";

export interface ChatDeps {
  /** The lockroom binary (from the lockroom.path setting, resolved). */
  lockroomPath(): string;
  /** The folder the agent works on (the first workspace folder), or undefined when none is open. */
  workspaceFolder(): string | undefined;
  /** The extension's output channel, for the agent's stderr and errors. */
  log: vscode.OutputChannel;
  /** Options of `lockroom acp` (`--shared`, the server folder this window's connection uses). */
  acpOptions(): string[];
  /**
   * This window's own lockroom connection, up before the chat starts: it starts the shared server
   * with the window's settings (lockroom.serverArgs), which `lockroom acp --shared` then joins.
   */
  prepare(): Promise<void>;
  /** The chat's sandbox, to review in Source Control (undefined: the chat has none any more). */
  chatSandbox(sandbox: { sandboxId: string; label: string; workspace: string } | undefined): void;
  /** The chat's sandbox may hold new changes. */
  sandboxTouched(sandboxId: string): void;
}

/** What a reloaded window needs to resume the chat (the workspace state). */
interface SavedChat {
  agent: string;
  sessionId: string;
  sandboxId: string;
  cwd: string;
}

const viewId = "lockroom.chat";
const lastAgentKey = "lockroom.chat.lastAgent";
const savedChatKey = "lockroom.chat.session";

export function registerChatView(context: vscode.ExtensionContext, deps: ChatDeps): void {
  const provider = new ChatViewProvider(context, deps);
  context.subscriptions.push(
    provider,
    vscode.workspace.registerTextDocumentContentProvider(chatDiffScheme, provider.diffs),
    vscode.window.registerWebviewViewProvider(viewId, provider),
    vscode.commands.registerCommand("lockroom.chat.new", () => provider.newChat()),
  );
}

class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  readonly diffs = new DiffDocuments();
  private readonly agents: AgentChoices;
  private view: vscode.WebviewView | undefined;
  /** The webview said `ready` and has not been hidden (or reloaded) since. */
  private webviewReady = false;
  /** The transcript version the webview holds (after the last snapshot or patch sent). */
  private sentVersion = -1;
  private run: ChatRun | undefined;
  /** The phase while there is no run: idle, or a start refused before it began. */
  private noRunPhase: Phase = { state: "idle" };
  /** A start is being set up (guards against a second click meanwhile). */
  private starting = false;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly deps: ChatDeps,
  ) {
    this.agents = new AgentChoices(deps.log);
    this.agents.onDidChange(() => this.post({ type: "agents", agents: this.agents.choices(), selectedAgent: this.selectedAgent() }));
    void this.resumeSaved();
  }

  /** A chat an earlier window of this workspace left (a reload): its agent again, on its sandbox. */
  private async resumeSaved(): Promise<void> {
    const saved = this.context.workspaceState.get<SavedChat>(savedChatKey);
    if (!saved || this.run || this.starting) return;
    if (saved.cwd !== this.deps.workspaceFolder() || !this.agents.find(saved.agent)) {
      await this.context.workspaceState.update(savedChatKey, undefined);
      return;
    }
    this.deps.log.appendLine(`chat: resuming the chat with ${saved.agent} on sandbox ${saved.sandboxId} (left by the last window)`);
    this.starting = true;
    try {
      await this.startAgent(saved.agent, { sandboxId: saved.sandboxId, sessionId: saved.sessionId });
    } finally {
      this.starting = false;
    }
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.webviewReady = false;
    view.webview.options = { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(this.context.extensionUri, "dist", "webview")] };
    view.webview.html = chatHtml(view.webview, this.context.extensionUri);
    view.webview.onDidReceiveMessage((m: unknown) => {
      const message = parseFromWebview(m);
      if (message) void this.receive(message).catch((e: unknown) => this.error(e));
      else this.deps.log.appendLine(`chat: ignored a malformed message from the view: ${JSON.stringify(m)?.slice(0, 200)}`);
    });
    view.onDidChangeVisibility(() => {
      if (!view.visible) this.webviewReady = false; // its page goes; it says `ready` when it is back
    });
    view.onDidDispose(() => {
      if (this.view !== view) return;
      this.view = undefined;
      this.webviewReady = false;
    });
  }

  /** `lockroom.chat.new`: ends the chat (asking first when that loses work) and shows the picker. */
  async newChat(): Promise<void> {
    const run = this.run;
    if (run && run.phase.state === "running") {
      const kept = unappliedReviewFiles(run.transcript.entries, run.transcript.session, run.fileActions);
      const why = run.busy
        ? `${run.agentName} is working on your last message.`
        : kept.length
          ? `${kept.length} changed ${kept.length === 1 ? "file was" : "files were"} kept in the sandbox and not applied (${kept.slice(0, 3).join(", ")}${kept.length > 3 ? ", …" : ""}).`
          : undefined;
      if (why) {
        const end = "End Chat";
        const choice = await vscode.window.showWarningMessage(`End this chat? ${why} Ending it stops the agent and destroys its sandbox.`, { modal: true }, end);
        if (choice !== end) return;
      }
    }
    await this.endChat();
    await vscode.commands.executeCommand(`${viewId}.focus`);
    this.post({ type: "focus" });
  }

  /** The window is closing or reloading: the chat's sandbox stays for the next window (resumeSaved). */
  dispose(): void {
    const run = this.run;
    this.run = undefined;
    if (run) void run.detach().catch(() => {});
    this.agents.dispose();
  }

  private async receive(m: FromWebview): Promise<void> {
    const run = this.run;
    switch (m.type) {
      case "ready":
        this.webviewReady = true;
        this.post({
          type: "init",
          agents: this.agents.choices(),
          selectedAgent: this.selectedAgent(),
          workspace: this.deps.workspaceFolder() ?? null,
          phase: this.phase(),
          fileActions: run?.fileActions ?? {},
        });
        this.sendSnapshot();
        return;
      case "resync":
        return this.sendSnapshot();
      case "start":
        return this.start(m.agent);
      case "cancelStart":
        if (run?.phase.state === "starting") await this.endChat();
        return;
      case "prompt":
        return run?.prompt(m.text);
      case "cancel":
        return run?.cancel();
      case "answer":
        return run?.answer(m.questionId, m.optionId);
      case "setMode":
        return run?.setMode(m.modeId);
      case "openLink":
        if (isOpenableLink(m.href)) await vscode.env.openExternal(vscode.Uri.parse(m.href, true));
        return;
      case "openFile":
        // Only paths the transcript shows (the page asks; the extension decides).
        if (run && shownPaths(run).has(m.path)) await openLocation(m.path, m.line);
        return;
      case "openDiff":
        return this.openDiff(m.entryId, m.index);
      case "fileAction":
        return run?.fileAction(m.entryId, m.path, m.action);
      case "command":
        return this.command(m.name);
    }
  }

  private async start(name: string): Promise<void> {
    if (this.starting || (this.run && (this.run.phase.state === "starting" || this.run.phase.state === "running"))) return;
    this.starting = true;
    try {
      await this.startAgent(name);
    } finally {
      this.starting = false;
    }
  }

  private async startAgent(name: string, resume?: { sandboxId: string; sessionId: string }): Promise<void> {
    const agent = this.agents.find(name);
    if (!agent) return void vscode.window.showErrorMessage(`There is no agent named “${name}” any more; pick another.`);
    const cwd = this.deps.workspaceFolder();
    if (!resume) await this.endChat(); // a resumed chat keeps its record until it runs again (or fails)
    if (!cwd) return this.setNoRunPhase({ state: "failed", agent: name, problem: noFolderProblem });
    await this.context.globalState.update(lastAgentKey, name);
    // Without it the chat still runs (lockroom acp starts the server itself); the log says why.
    await this.deps.prepare().catch((e: unknown) => this.deps.log.appendLine(`chat: lockroom's own connection is not up: ${e instanceof Error ? e.message : String(e)}`));
    const run: ChatRun = new ChatRun({
      lockroomPath: this.deps.lockroomPath(),
      cwd,
      agent,
      log: (line) => this.deps.log.appendLine(line),
      phaseChanged: (phase) => {
        if (this.run !== run) return;
        this.post({ type: "phase", phase });
        if (phase.state === "running") this.sendSnapshot();
        // lockroom ended the session and its sandbox (the agent exited): nothing to resume or review.
        if (phase.state === "ended" || phase.state === "failed") void this.forgetChat();
      },
      acpOptions: this.deps.acpOptions(),
      ...(resume ? { resume } : {}),
      sessionStarted: (info) => {
        if (this.run !== run || !info.sandboxId) return;
        this.deps.chatSandbox({ sandboxId: info.sandboxId, label: `chat: ${agent.name}`, workspace: cwd });
        if (info.shared)
          void this.context.workspaceState.update(savedChatKey, { agent: agent.name, sessionId: info.sessionId, sandboxId: info.sandboxId, cwd } satisfies SavedChat);
      },
      sandboxTouched: (sandboxId) => {
        if (this.run === run) this.deps.sandboxTouched(sandboxId);
      },
      patched: (patch) => {
        if (this.run !== run || !this.webviewReady) return;
        if (this.sentVersion !== patch.since) return this.sendSnapshot();
        this.sentVersion = patch.version;
        this.post({ type: "patch", patch });
      },
      fileActionsChanged: (fileActions) => {
        if (this.run === run) this.post({ type: "fileActions", fileActions });
      },
      showError: (message) => void vscode.window.showErrorMessage(message),
    });
    this.run = run;
    this.sentVersion = -1;
    this.starting = false;
    await vscode.window.withProgress({ location: { viewId } }, () => run.start());
  }

  /** Nothing to resume on the next window, nothing of the chat in Source Control. */
  private async forgetChat(): Promise<void> {
    this.deps.chatSandbox(undefined);
    await this.context.workspaceState.update(savedChatKey, undefined);
  }

  /** Closes the current chat, if any (its sandbox ends); the view goes back to the picker. */
  private async endChat(): Promise<void> {
    const run = this.run;
    this.run = undefined;
    this.sentVersion = -1;
    this.setNoRunPhase({ state: "idle" });
    await this.forgetChat();
    if (!run) return;
    this.deps.log.appendLine(`chat: ending the chat with ${run.agentName}`);
    await run.close().catch((e: unknown) => this.error(e));
  }

  private async openDiff(entryId: number, index: number): Promise<void> {
    const entry = this.run?.transcript.entry(entryId);
    const item = entry?.kind === "tool" ? entry.content[index] : undefined;
    if (!entry || entry.kind !== "tool" || item?.type !== "diff") return;
    if (item.omittedChars !== undefined)
      return void vscode.window.showInformationMessage(`The change of ${item.path} is too large to show here; \`lockroom diff\` in a terminal shows it.`);
    const label = entry.review ? "Sandbox Changes" : "Agent's Edit";
    this.deps.log.appendLine(`chat: diff of ${displayPath(item.path, this.deps.workspaceFolder() ?? null)}`);
    await this.diffs.open(item.path, item.isNewFile ? null : item.oldText, item.newText, label);
  }

  private async command(name: CommandName): Promise<void> {
    switch (name) {
      case "newChat":
        return this.newChat();
      case "openAgentSettings":
        return void (await vscode.commands.executeCommand("workbench.action.openSettings", "lockroom.agents"));
      case "openPathSetting":
        return void (await vscode.commands.executeCommand("workbench.action.openSettings", "lockroom.path"));
      case "showLog":
        return this.deps.log.show(true);
      case "openFolder":
        return void (await vscode.commands.executeCommand("workbench.action.files.openFolder"));
      case "doctor":
        return void (await vscode.commands.executeCommand("lockroom.doctor"));
    }
  }

  private phase(): Phase {
    return this.run?.phase ?? this.noRunPhase;
  }

  private setNoRunPhase(phase: Phase): void {
    this.noRunPhase = phase;
    if (!this.run) this.post({ type: "phase", phase });
  }

  private selectedAgent(): string | null {
    const last = this.run?.agentName ?? this.context.globalState.get<string>(lastAgentKey);
    return last && this.agents.find(last) ? last : (this.agents.definitions[0]?.name ?? null);
  }

  /** The whole transcript to the webview, when there is one to show. */
  private sendSnapshot(): void {
    const run = this.run;
    if (!run || run.transcript.version < 0 || !this.webviewReady) return;
    this.sentVersion = run.transcript.version;
    this.post({ type: "snapshot", snapshot: run.transcript.toSnapshot() });
  }

  private post(message: ToWebview): void {
    if (this.view && this.webviewReady) void this.view.webview.postMessage(message);
  }

  private error(e: unknown): void {
    const message = e instanceof Error ? e.message : String(e);
    this.deps.log.appendLine(`chat: ${message}`);
    void vscode.window.showErrorMessage(message);
  }
}

/** The paths of tool calls' locations and diffs in a chat's transcript. */
function shownPaths(run: ChatRun): Set<string> {
  const paths = new Set<string>();
  for (const e of run.transcript.entries) {
    if (e.kind !== "tool") continue;
    for (const l of e.locations) paths.add(l.path);
    for (const c of e.content) if (c.type === "diff") paths.add(c.path);
  }
  return paths;
}
