// LockroomContext: owns the connection to lockroom (one `lockroom serve --stdio`, which talks to
// the user's shared lockroom server, so sandboxes outlive a window reload) and the models built
// on it — processes, sandboxes, one review per sandbox — plus the output channel. Features get
// the context and subscribe to `onDidConnect`; when lockroom goes away the context says so once,
// with what to do, and connects again on the next command that needs it.
import * as vscode from "vscode";
import { LockroomClient, describeExit } from "../core/client.js";
import { serveApprovals } from "../core/approvals.js";
import { ProcessHub } from "../core/processes.js";
import { SandboxReview } from "../core/review.js";
import { SandboxesModel } from "../core/sandboxes.js";
import { askInNotification } from "./approvalPrompt.js";
import { settings } from "./config.js";

export interface Connection {
  client: LockroomClient;
  hub: ProcessHub;
  sandboxes: SandboxesModel;
}

export class LockroomContext implements vscode.Disposable {
  readonly log = vscode.window.createOutputChannel("lockroom");
  private connection: Connection | undefined;
  private connecting: Promise<Connection> | undefined;
  private readonly reviews = new Map<string, SandboxReview>();
  private readonly connectEmitter = new vscode.EventEmitter<Connection>();
  private readonly disconnectEmitter = new vscode.EventEmitter<void>();
  readonly onDidConnect = this.connectEmitter.event;
  readonly onDidDisconnect = this.disconnectEmitter.event;
  private disposed = false;
  /** True from deactivate on: the window is closing or reloading. */
  stopping = false;

  constructor(readonly extension: vscode.ExtensionContext) {}

  /** The workspace folder sandboxes are made for (the first one). */
  get workspaceFolder(): string | undefined {
    return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  }

  get current(): Connection | undefined {
    return this.connection;
  }

  /** The connection, started (and this workspace's detached sandboxes re-attached) on first use. */
  connect(): Promise<Connection> {
    if (this.connection) return Promise.resolve(this.connection);
    this.connecting ??= this.start().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  review(sandboxId: string): SandboxReview {
    const conn = this.connection;
    if (!conn) throw new Error("lockroom is not connected");
    let review = this.reviews.get(sandboxId);
    if (!review) {
      review = new SandboxReview(conn.client, sandboxId);
      this.reviews.set(sandboxId, review);
    }
    return review;
  }

  dropReview(sandboxId: string): void {
    this.reviews.get(sandboxId)?.dispose();
    this.reviews.delete(sandboxId);
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    const conn = this.connection;
    this.teardown();
    // The sandboxes stay with the shared server (detached) for the next window.
    if (conn) await conn.client.close(3000);
    this.log.dispose();
  }

  private async start(): Promise<Connection> {
    const s = settings();
    this.log.appendLine(`starting ${s.path} serve --stdio ${s.serverArgs.join(" ")}`.trimEnd());
    const client = await LockroomClient.start({
      lockroom: s.path,
      serveArgs: s.serverArgs,
      networkApproval: true,
      clientName: "lockroom-vscode",
      clientVersion: String(this.extension.extension.packageJSON.version ?? "0"),
      onLog: (line) => this.log.appendLine(line),
      ...(this.workspaceFolder ? { cwd: this.workspaceFolder } : {}),
    }).catch((e: unknown) => {
      throw new Error(`${e instanceof Error ? e.message : String(e)}. Check the lockroom.path setting (now "${s.path}").`);
    });
    const hub = new ProcessHub(client);
    const sandboxes = new SandboxesModel(client, hub);
    const conn: Connection = { client, hub, sandboxes };
    serveApprovals(client, async (question, signal) => {
      this.log.appendLine(`network question: ${question.message} (${question.params.reason})`);
      const decision = await askInNotification(question, signal);
      this.log.appendLine(`network answer for ${question.params.host}:${question.params.port}: ${decision ?? "none (denied)"}`);
      return decision;
    }, (id) => sandboxes.get(id)?.entry.label);
    client.on("window/logMessage", (m) => this.log.appendLine(`[server] ${m.message}`));
    void client.exited().then((exit) => {
      if (this.connection !== conn) return;
      this.teardown();
      if (this.disposed || exit.expected) return;
      this.log.appendLine(`lockroom went away: ${describeExit(exit)}`);
      void vscode.window.showErrorMessage(`lockroom went away (${describeExit(exit)}). Its sandboxes keep running in the shared server when it is alive; the next lockroom command reconnects.`, "Show Log").then((c) => {
        if (c) this.log.show();
      });
    });
    this.connection = conn;
    const attached = await sandboxes.reattach(this.workspaceFolder);
    if (attached.length) this.log.appendLine(`re-attached ${attached.map((a) => a.sandbox.sandboxId).join(", ")} (left by an earlier window)`);
    this.connectEmitter.fire(conn);
    return conn;
  }

  private teardown(): void {
    const conn = this.connection;
    if (!conn) return;
    this.connection = undefined;
    for (const id of [...this.reviews.keys()]) this.dropReview(id);
    conn.sandboxes.dispose();
    conn.hub.dispose();
    this.disconnectEmitter.fire();
  }
}
