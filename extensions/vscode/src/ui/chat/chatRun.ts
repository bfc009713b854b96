// One chat from start to close: starts the agent (ChatSession over `lockroom acp`), keeps a
// Transcript copy of its model in step and hands each patch to the view, forwards what the user
// does (prompt, stop, answers, mode), runs "Apply file" / "Discard file" on the latest kept
// review, and ends the session (the sandbox with it) on close(). Its phase — starting, running,
// ended, failed — is what the view shows around the transcript. No vscode import: the view
// passes callbacks.
// The agent runs with `lockroom acp --shared`, so its sandbox lives in the user's shared server:
// detach() (the window closing or reloading) leaves it — files, pending changes — for the next
// window, whose ChatRun starts with `resume` and opens the session on it again; close() (the
// user ending the chat) destroys it. The host is told the sandbox (for Source Control) and when
// it is likely to have changed (a tool call finished, a turn ended).
import type { ChatPatch } from "../../core/acp/chatTypes.js";
import { lockroomAcpArgs, type AgentDefinition } from "../../core/acp/agents.js";
import { ChatSession } from "../../core/acp/chatSession.js";
import { fileActionKey, type FileActions, type FileActionState, type Phase } from "../../webview/chat/protocol.js";
import { offersFileActions, latestTurnStart } from "../../webview/chat/present.js";
import { Transcript } from "../../webview/chat/transcript.js";
import { applyResultState, discardResultState, errorState, isStaleView } from "./fileActionText.js";
import { describeStartError } from "./startProblems.js";

export interface ChatRunHost {
  lockroomPath: string;
  cwd: string;
  agent: AgentDefinition;
  /** A line for the output channel (lockroom's stderr, errors). */
  log(line: string): void;
  phaseChanged(phase: Phase): void;
  /** The transcript moved on by `patch` (already applied to `transcript`). */
  patched(patch: ChatPatch): void;
  fileActionsChanged(fileActions: FileActions): void;
  /** An error of something the user did, to show (e.g. a mode the agent refused). */
  showError(message: string): void;
  /** Options of `lockroom acp` itself (`--shared`, `--server-dir …`). */
  acpOptions?: string[];
  /** Open the session on the sandbox an earlier window's chat left. */
  resume?: { sandboxId: string; sessionId: string };
  /** The agent runs: its session and sandbox (to remember for a reload, to review in Source Control). */
  sessionStarted?(info: { sessionId: string; sandboxId: string | null; shared: boolean; resumed: boolean }): void;
  /** The sandbox may hold new changes (a tool call finished, a turn ended). */
  sandboxTouched?(sandboxId: string): void;
}

export class ChatRun {
  readonly transcript = new Transcript();
  fileActions: FileActions = {};
  private phaseValue: Phase;
  private session: ChatSession | undefined;
  private readonly abort = new AbortController();
  private closed = false;
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly host: ChatRunHost) {
    this.phaseValue = { state: "starting", agent: host.agent.name, startedAt: Date.now() };
  }

  get phase(): Phase {
    return this.phaseValue;
  }

  get agentName(): string {
    return this.host.agent.name;
  }

  /** A turn is running. */
  get busy(): boolean {
    return this.transcript.session.busy;
  }

  /** Starts the agent; resolves when it runs, failed, or was closed meanwhile. */
  async start(): Promise<void> {
    const { lockroomPath, cwd, agent } = this.host;
    this.setPhase({ state: "starting", agent: agent.name, startedAt: Date.now() });
    this.host.log(`chat: starting ${agent.name} (${[lockroomPath, ...lockroomAcpArgs(agent, this.host.acpOptions)].join(" ")}) in ${cwd}`);
    let session: ChatSession;
    try {
      session = await ChatSession.start({
        lockroom: lockroomPath,
        agent,
        cwd,
        env: process.env,
        clientInfo: { name: "lockroom-vscode", version: "0.1.0" },
        onLog: (line) => this.host.log(line),
        signal: this.abort.signal,
        ...(this.host.acpOptions ? { acpOptions: this.host.acpOptions } : {}),
        ...(this.host.resume ? { resume: this.host.resume } : {}),
      });
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      if (this.closed) return;
      this.host.log(`chat: ${agent.name} did not start: ${message}`);
      this.setPhase({ state: "failed", agent: agent.name, problem: describeStartError(message, { lockroomPath, agentName: agent.name }) });
      return;
    }
    if (this.closed) {
      await session.close(5000);
      session.model.dispose();
      return;
    }
    this.session = session;
    const sandbox = session.connection.sandbox;
    if (sandbox?.resumed)
      session.model.notice(
        "info",
        "Resumed after the window reloaded",
        `The sandbox ${sandbox.sandboxId} kept its files and the changes not applied yet. ${
          session.connection.initializeResult.agentCapabilities?.loadSession ? "The agent reloaded the conversation." : "The agent starts a new conversation in it."
        }`,
      );
    this.transcript.applySnapshot(session.model.snapshot());
    const stopModel = session.model.onChange(() => this.sync());
    const stopUpdates = session.connection.onUpdate((u) => {
      if (!sandbox) return;
      const done = (u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update") && (u.status === "completed" || u.status === "failed");
      if (done) this.host.sandboxTouched?.(sandbox.sandboxId);
    });
    this.unsubscribe = () => {
      stopModel();
      stopUpdates();
    };
    this.host.log(`chat: ${agent.name} runs (lockroom pid ${session.connection.pid ?? "?"}${sandbox ? `, sandbox ${sandbox.sandboxId}${sandbox.resumed ? " resumed" : ""}` : ""})`);
    this.host.sessionStarted?.({ sessionId: session.connection.sessionId, sandboxId: sandbox?.sandboxId ?? null, shared: sandbox?.shared ?? false, resumed: sandbox?.resumed ?? false });
    this.setPhase({ state: "running", agent: agent.name });
  }

  prompt(text: string): void {
    const session = this.live();
    if (!session) return;
    if (session.model.busy) return this.host.showError("The agent is still working on the last message; stop it or wait for it.");
    void session.prompt(text).then((outcome) => {
      const sandboxId = session.connection.sandbox?.sandboxId;
      if (sandboxId) this.host.sandboxTouched?.(sandboxId);
      if (!("error" in outcome)) return;
      this.host.log(`chat: the turn failed: ${outcome.error}`);
      // The agent exited: lockroom ended the session and its sandbox; nothing more can be sent.
      if (sessionEnded(outcome.error) && this.live() === session) {
        this.setPhase({ state: "ended", agent: this.host.agent.name });
        void session.close(10_000).catch(() => {});
      }
    });
  }

  cancel(): void {
    void this.session?.cancel();
  }

  answer(questionId: string, optionId: string): void {
    if (this.session && !this.session.answer(questionId, optionId)) this.host.log(`chat: question ${questionId} was no longer open`);
  }

  setMode(modeId: string): void {
    const session = this.live();
    if (!session) return;
    session.setMode(modeId).catch((e: unknown) => {
      this.host.showError(`The agent did not switch modes: ${e instanceof Error ? e.message : String(e)}`);
      this.sync(true);
    });
  }

  /** "Apply file" / "Discard file" on a file of the latest kept review. */
  async fileAction(entryId: number, path: string, action: "apply" | "discard"): Promise<void> {
    const session = this.live();
    const entry = this.transcript.entry(entryId);
    if (!session || entry?.kind !== "tool" || !entry.review) return;
    if (!offersFileActions(entry, latestTurnStart(this.transcript.entries), this.transcript.session)) return;
    if (!entry.review.files.includes(path)) return;
    const key = fileActionKey(entryId, path);
    const current = this.fileActions[key]?.state;
    if (current === "working" || current === "applied" || current === "discarded") return;
    this.setFileAction(key, { state: "working", message: action === "apply" ? "Applying…" : "Discarding…" });
    let state: FileActionState;
    try {
      if (action === "discard") state = discardResultState(await session.discard([path]));
      else {
        try {
          state = applyResultState(await session.apply([path], entry.review.viewId ?? undefined), path);
        } catch (e) {
          // A discard (or apply) of another file since dropped the review's view. Nothing ran in
          // the sandbox since this review (it is the last turn's and the chat is idle), so a
          // fresh listing still holds what the card shows for this file.
          if (!isStaleView(e)) throw e;
          const fresh = await session.review();
          if (!fresh.files.some((f) => f.path === path)) throw new Error("the sandbox no longer has a change of this file");
          state = applyResultState(await session.apply([path], fresh.viewId), path);
        }
      }
    } catch (e) {
      state = errorState(action, e);
    }
    this.host.log(`chat: ${action} ${path}: ${state.message}`);
    this.setFileAction(key, state);
    const sandboxId = session.connection.sandbox?.sandboxId;
    if (sandboxId) this.host.sandboxTouched?.(sandboxId);
  }

  /** Ends the chat: a start in progress is aborted, a running session closed (its sandbox ends). */
  close(): Promise<void> {
    return this.end((session) => session.close(10_000));
  }

  /** The window is closing or reloading: the process ends, a shared sandbox stays for the next window. */
  detach(): Promise<void> {
    return this.end((session) => session.detach(5000));
  }

  /** The session when it runs and is not closed. */  /** The session when it runs and is not closed. */
  private live(): ChatSession | undefined {
    return this.closed || !this.session || this.session.model.ended ? undefined : this.session;
  }

  private async end(how: (session: ChatSession) => Promise<void>): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.abort.abort();
    const session = this.session;
    if (!session) return;
    this.unsubscribe?.();
    try {
      await how(session);
    } finally {
      session.model.dispose();
    }
  }

  /** Brings the copy up to the model and tells the view; `force` sends even an empty patch. */
  private sync(force = false): void {
    const session = this.session;
    if (!session || this.closed) return;
    const patch = session.model.changesSince(this.transcript.version);
    if (!force && patch.version === patch.since) return;
    this.transcript.applyPatch(patch);
    this.host.patched(patch);
    if (this.transcript.session.ended && this.phaseValue.state === "running") this.setPhase({ state: "ended", agent: this.host.agent.name });
  }

  private setPhase(phase: Phase): void {
    if (this.phaseValue.state === "ended" && phase.state === "ended") return;
    this.phaseValue = phase;
    this.host.phaseChanged(phase);
  }

  private setFileAction(key: string, state: FileActionState): void {
    this.fileActions = { ...this.fileActions, [key]: state };
    this.host.fileActionsChanged(this.fileActions);
  }
}

/** lockroom's answer once the agent behind it exited (protocol/acp.md, "Lifetimes"). */
function sessionEnded(error: string): boolean {
  return /the session has ended/.test(error);
}
