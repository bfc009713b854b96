// A window reload at the protocol level, against the real lockroom in its shared-server mode: a
// first connection makes a sandbox with a terminal, a command still running and a change to
// review, and goes away; a second connection finds the sandbox, attaches it, gets the output
// written meanwhile, types into the same terminal, and reviews the same change.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ProcessHub } from "../src/core/processes.js";
import { SandboxReview } from "../src/core/review.js";
import { SandboxesModel } from "../src/core/sandboxes.js";
import { gitWorkspace, startClient, tempDir, until } from "./support.js";

test("a reload: the sandbox, its terminal, a command's output meanwhile and its changes survive", async (t) => {
  const ws = gitWorkspace(t, { "f.txt": "one\n" });
  const serverDir = tempDir(t, "lockroom-vscode-server-");
  // Short graces: a failing run must not leave its detached sandbox behind for long.
  const shared = { serveArgs: ["--server-dir", serverDir, "--idle-exit", "2", "--detached-grace", "30", "--detached-changes-grace", "60"] };

  // Window 1.
  const first = await startClient(t, shared);
  const hub1 = new ProcessHub(first);
  const model1 = new SandboxesModel(first, hub1);
  const { sandboxId } = await model1.create({ workspace: ws, label: "reload test" });
  const shell = await hub1.start({ sandboxId, argv: ["sh"], pty: { cols: 100, rows: 30 } });
  let screen1 = "";
  shell.onOutput((d) => (screen1 += d.toString()));
  await shell.write("echo from-window-1\n");
  await until(() => screen1.includes("from-window-1\r\n"), 20_000, "the shell's first answer");
  const edit = await hub1.start({ sandboxId, argv: ["sh", "-c", "echo two > /workspace/f.txt"] });
  assert.equal((await edit.exited()).exitCode, 0);
  const late = await hub1.start({ sandboxId, argv: ["sh", "-c", "sleep 5; echo written-while-detached"] });
  // The terminal too writes while no window listens (the model re-attaches its process before
  // any terminal subscribes: what it replays must wait for that subscriber).
  await shell.write("sleep 6; echo shell-while-detached\n");
  // The echo of what was typed comes to this window (after the write's answer): wait for it, so
  // that closing the window does not drop it in flight.
  await until(() => screen1.includes("echo shell-while-detached\r\n"), 10_000, "the typed command's echo in window 1");
  await until(() => model1.get(sandboxId)?.processes.size === 3, 5_000, "three processes in the model");
  model1.dispose();
  hub1.dispose();
  await first.close();

  // Window 2: the same workspace.
  const second = await startClient(t, shared);
  const hub2 = new ProcessHub(second);
  const model2 = new SandboxesModel(second, hub2);
  t.after(() => {
    model2.dispose();
    hub2.dispose();
  });
  const attached = await model2.reattach(ws);
  assert.deepEqual(attached.map((a) => a.sandbox.sandboxId), [sandboxId]);
  assert.equal(model2.get(sandboxId)?.entry.label, "reload test");
  assert.equal(model2.get(sandboxId)?.entry.attached, true);
  const running = attached[0]!.processes.filter((p) => p.running).map((p) => p.processId);
  assert.ok(running.includes(shell.processId), "the terminal still runs");

  // The command that finished (or finishes) while detached: its output arrives, replayed or live.
  const lateAgain = hub2.adopt(sandboxId, late.processId);
  const lateOut = await lateAgain.collect();
  assert.equal(lateOut.exit.exitCode, 0);
  assert.equal(lateOut.stdout, "written-while-detached\n");

  // The same terminal answers the new window.
  const shellAgain = hub2.adopt(sandboxId, shell.processId);
  let screen2 = "";
  shellAgain.onOutput((d) => (screen2 += d.toString()));
  // Meant to be written while no window listens; on a loaded machine window 1 may still have been
  // closing then, and got it itself. Either way it arrives once, in one of the two windows.
  const seen = () => [screen1, screen2].reduce((n, screen) => n + (screen.match(/(?:^|\n)shell-while-detached\r\n/g)?.length ?? 0), 0);
  await until(() => seen() > 0, 20_000, "the terminal's output from while it was detached").catch((e: Error) => {
    throw new Error(`${e.message}; window 1's terminal showed ${JSON.stringify(screen1)}, window 2's ${JSON.stringify(screen2)}`);
  });
  assert.equal(seen(), 1, `the output from while detached arrived once: ${JSON.stringify(screen1)} | ${JSON.stringify(screen2)}`);
  await shellAgain.write("echo from-window-2\n");
  await until(() => screen2.includes("from-window-2\r\n"), 20_000, "the shell's answer in window 2");

  // The change made before the reload is there to review.
  const review = new SandboxReview(second, sandboxId);
  t.after(() => review.dispose());
  const view = await review.refresh();
  assert.deepEqual(view.files.map((f) => [f.status, f.path]), [["modified", "f.txt"]]);

  // Nothing else is left detached for this workspace, and the sandbox ends when asked.
  assert.deepEqual(await model2.reattach(ws), []);
  await model2.destroy(sandboxId);
  await until(() => model2.get(sandboxId)?.entry.state === "gone", 20_000, "the sandbox gone in the model");
  assert.equal([...model2.get(sandboxId)!.processes.values()].some((p) => p.running), false);
});
