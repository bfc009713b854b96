// ChatSession: one chat as the panel drives it — an AgentConnection (the `lockroom acp` process
// and its session) wired to a ChatModel. Prompts, updates, permission questions, turn ends and
// errors, mode and config changes and the process's exit all land in the model, which is what the
// webview renders; the panel answers questions through answer() and otherwise only sends what the
// user did.
import type * as acp from "@agentclientprotocol/sdk";
import { AgentConnection, type AgentConnectionOptions, type LockroomReview } from "./agentConnection.js";
import { ChatModel, type ChatModelOptions } from "./chatModel.js";
import type { ChangesApplyResult, ChangesDiscardResult } from "../../protocol/generated.js";

/** How a turn ended: the agent's stop reason, or the error the model shows. */
export type TurnOutcome = { stopReason: acp.StopReason } | { error: string };

export class ChatSession {
  private constructor(
    readonly connection: AgentConnection,
    readonly model: ChatModel,
  ) {
    model.started(connection.session);
    connection.onUpdate((u) => model.update(u));
    connection.setPermissionHandler((request, signal) => model.ask(request, signal));
    connection.onExit((exit) => model.exited(exit));
  }

  /** Starts the agent (AgentConnection.start) and a model for its session. */
  static async start(options: AgentConnectionOptions & { model?: ChatModelOptions }): Promise<ChatSession> {
    const connection = await AgentConnection.start(options);
    return new ChatSession(connection, new ChatModel(options.model));
  }

  /**
   * Sends a prompt and records the turn: the user's entry now, then the stop reason or the error.
   * Refused while a turn runs or after the process ended (the model is left as it is).
   */
  async prompt(content: string | acp.ContentBlock[]): Promise<TurnOutcome> {
    if (this.model.ended) throw new Error("this chat's agent has ended; start a new chat");
    if (this.model.busy) throw new Error("a turn is in progress; cancel it or wait for it");
    const blocks: acp.ContentBlock[] = typeof content === "string" ? [{ type: "text", text: content }] : content;
    this.model.userMessage(blocks);
    let outcome: TurnOutcome;
    try {
      outcome = { stopReason: (await this.connection.prompt(blocks)).stopReason };
    } catch (e) {
      outcome = { error: e instanceof Error ? e.message : String(e) };
    }
    // Updates read before the answer are handled in microtasks the answer may overtake.
    await new Promise((resolve) => setImmediate(resolve));
    if ("stopReason" in outcome) this.model.turnEnded(outcome.stopReason);
    else this.model.turnFailed(outcome.error);
    return outcome;
  }

  /** Cancels the turn: pending questions answered "cancelled" (as ACP asks), then session/cancel. */
  async cancel(): Promise<void> {
    this.model.cancelQuestions();
    await this.connection.cancel();
  }

  /** The user's answer to a question (optionId, or null to dismiss); false when it is stale. */
  answer(questionId: string, optionId: string | null): boolean {
    return this.model.answer(questionId, optionId);
  }

  async setMode(modeId: string): Promise<void> {
    await this.connection.setMode(modeId);
    this.model.modeChanged(modeId);
  }

  async setConfigOption(configId: string, value: string | boolean): Promise<void> {
    this.model.configOptionsChanged(await this.connection.setConfigOption(configId, value));
  }

  review(): Promise<LockroomReview> {
    return this.connection.review();
  }

  apply(paths?: string[], viewId?: string): Promise<ChangesApplyResult> {
    return this.connection.apply(paths, viewId);
  }

  discard(paths?: string[]): Promise<ChangesDiscardResult> {
    return this.connection.discard(paths);
  }

  /** Ends the process but not a shared sandbox (AgentConnection.detach): the window is closing or reloading. */
  async detach(graceMs?: number): Promise<void> {
    this.model.exited(await this.connection.detach(graceMs));
  }

  /** Ends the agent (AgentConnection.close); the model records the exit. The owner disposes the model when the panel goes. */
  async close(graceMs?: number): Promise<void> {
    this.model.exited(await this.connection.close(graceMs));
  }
}
