// A VS Code terminal backed by a pty process in a guest (process/start with `pty`): keystrokes
// go to process/write, VS Code's size to process/resize, the guest's output to the terminal,
// and the terminal closes with the process's exit status. Closing the terminal ends the
// process (SIGHUP, as closing a terminal window does). Open terminals are remembered in the
// workspace state, so that after a window reload (the sandbox re-attached) they open again on
// the same guest process, with the output it wrote meanwhile.
import * as vscode from "vscode";
import type { GuestProcess } from "../core/processes.js";
import type { LockroomContext } from "./context.js";

const kRemembered = "lockroom.terminals";
const kHangupDelayMs = 1500;

interface Remembered {
  sandboxId: string;
  processId: string;
  name: string;
  argv: string[];
}

function remember(ctx: LockroomContext, t: Remembered, open: boolean): void {
  const now = ctx.extension.workspaceState.get<Remembered[]>(kRemembered, []).filter((r) => r.processId !== t.processId);
  void ctx.extension.workspaceState.update(kRemembered, open ? [...now, t] : now);
}

/** Starts `argv` with a pty in the sandbox, in a new terminal. */
export function openGuestTerminal(ctx: LockroomContext, sandboxId: string, argv: string[], name: string): vscode.Terminal {
  return guestTerminal(ctx, name, argv, async (size) => {
    const conn = await ctx.connect();
    return conn.hub.start({ sandboxId, argv, pty: { cols: size.columns, rows: size.rows } });
  });
}

/** After a reload: a terminal on each remembered pty process that the re-attached sandboxes still run. */
export function reopenGuestTerminals(ctx: LockroomContext, running: { sandboxId: string; processId: string }[]): void {
  const live = new Set(running.map((r) => r.processId));
  for (const r of ctx.extension.workspaceState.get<Remembered[]>(kRemembered, [])) {
    if (!live.has(r.processId)) {
      remember(ctx, r, false);
      continue;
    }
    guestTerminal(ctx, r.name, r.argv, async (size) => {
      const conn = await ctx.connect();
      const p = conn.hub.adopt(r.sandboxId, r.processId);
      void p.resize(size.columns, size.rows).catch(() => {});
      return p;
    }, r.processId);
  }
}

function guestTerminal(ctx: LockroomContext, name: string, argv: string[], start: (size: { columns: number; rows: number }) => Promise<GuestProcess>, adopted?: string): vscode.Terminal {
  const write = new vscode.EventEmitter<string>();
  const close = new vscode.EventEmitter<number | void>();
  let process: GuestProcess | undefined;
  let pendingSize: vscode.TerminalDimensions | undefined;
  let exited = false;
  const decoder = new TextDecoder("utf-8");

  const pty: vscode.Pseudoterminal = {
    onDidWrite: write.event,
    onDidClose: close.event,
    open: async (size) => {
      const dims = pendingSize ?? size ?? { columns: 80, rows: 24 };
      try {
        process = await start({ columns: Math.max(1, dims.columns), rows: Math.max(1, dims.rows) });
      } catch (e) {
        write.fire(`\r\nlockroom: cannot start ${argv.join(" ")}: ${e instanceof Error ? e.message : String(e)}\r\n`);
        close.fire(1);
        return;
      }
      if (adopted) write.fire(`[lockroom: re-attached to ${argv.join(" ")} (${adopted}) after the window reloaded]\r\n`);
      const p = process;
      remember(ctx, { sandboxId: p.sandboxId, processId: p.processId, name, argv }, true);
      p.onOutput((data) => write.fire(decoder.decode(data, { stream: true })));
      p.onExit((exit) => {
        exited = true;
        remember(ctx, { sandboxId: p.sandboxId, processId: p.processId, name, argv }, false);
        const how = exit.signal ? `ended by ${exit.signal}` : `exited with ${exit.exitCode}`;
        write.fire(`\r\n[${argv[0]} ${how}${exit.reason === "sandboxGone" ? ": the sandbox ended" : ""}]\r\n`);
        close.fire(exit.exitCode ?? 1);
      });
    },
    close: () => {
      // A window closing or reloading closes its terminals too, and then the process must stay
      // for the next window (the sandbox is detached, not ended). VS Code does not say why a
      // terminal closes, and may close them before deactivate() runs: so the hangup waits a
      // moment, and does not happen once the extension is stopping (or gone, with its timers).
      const p = process;
      if (!p || exited || ctx.stopping) return;
      setTimeout(() => {
        if (ctx.stopping || exited) return;
        remember(ctx, { sandboxId: p.sandboxId, processId: p.processId, name, argv }, false);
        void p.signal("SIGHUP").catch(() => {});
      }, kHangupDelayMs);
    },
    handleInput: (data) => {
      if (process && !exited) void process.write(data).catch(() => {});
    },
    setDimensions: (dims) => {
      pendingSize = dims;
      if (process && !exited) void process.resize(Math.max(1, dims.columns), Math.max(1, dims.rows)).catch(() => {});
    },
  };
  const terminal = vscode.window.createTerminal({ name, pty, iconPath: new vscode.ThemeIcon("vm") });
  terminal.show();
  return terminal;
}
