// @ts-check
// The real agent end to end: the built-in `claude` kit's claude-agent-acp (the published npm
// package, laid into the guest image by the kit's npm layer) runs in a lockroom guest behind
// `lockroom acp`, and talks to a scripted Anthropic Messages API (model_api.py) as it would to
// the real one: HTTPS to api.anthropic.com:443, through lockroom's egress proxy, which verifies
// the upstream's certificate and puts the real key into x-api-key. Nothing of the kit is changed
// for the test: api.anthropic.com resolves to the scripted server's address in a private mount
// namespace of `lockroom acp` (its /etc/hosts bound over, so the host's resolver answers with
// it), the server's certificate is signed by a CA made here and given with --upstream-ca, and
// the scripted server's own address is allowed by an exact rule (lockroom denies loopback
// addresses otherwise).
//
// The editor is the official ACP SDK (../driver/editor.js). Checked: the agent's updates reach
// the editor (its text, its Write tool call with the host path); the agent's own permission
// questions are answered; the model API got the real key on every request and the guest only
// ever held the sentinel (the scripted Bash command collects ANTHROPIC_API_KEY from every guest
// process into a file, which the review shows); the review's diffs; the host unchanged before
// approval and exactly the sandbox's files after.
//
//   node claude_e2e.js --lockroom BIN     (root: it needs a private mount namespace)
import { execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { Editor, choose } from "../driver/editor.js";
import { eq, ok, makeWorkspace, snapshot, eqTree } from "../driver/check.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const lockroomArg = process.argv[process.argv.indexOf("--lockroom") + 1];
const lockroom = lockroomArg && path.resolve(lockroomArg); // the agent runs in the workspace
const trace = process.argv.includes("--trace");
if (!process.argv.includes("--lockroom") || !lockroom) {
  console.error("usage: node claude_e2e.js --lockroom BIN [--trace]");
  process.exit(2);
}
const realKey = "sk-ant-test-" + Math.random().toString(16).slice(2);
const modelAddress = "127.77.0.1"; // a loopback address of its own, so port 443 is free
const sentinel = "LOCKROOM_SECRET_ANTHROPIC_API_KEY";

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "lockroom-claude-e2e-"));
const file = (/** @type {string} */ name) => path.join(tmp, name);

/** A CA and a certificate for api.anthropic.com signed by it (openssl). */
function makeCertificates() {
  const run = (/** @type {string[]} */ ...args) => execFileSync("openssl", args, { stdio: "ignore" });
  run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", file("ca.key"), "-out", file("ca.pem"), "-days", "2", "-subj", "/CN=lockroom e2e CA");
  run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", file("api.key"), "-out", file("api.csr"), "-subj", "/CN=api.anthropic.com");
  fs.writeFileSync(file("ext.cnf"), "subjectAltName=DNS:api.anthropic.com\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n");
  run("x509", "-req", "-in", file("api.csr"), "-CA", file("ca.pem"), "-CAkey", file("ca.key"), "-CAcreateserial", "-out", file("api.pem"), "-days", "2", "-extfile", file("ext.cnf"));
}

/** Starts model_api.py on modelAddress:443; resolves when it listens. */
function startModel() {
  const server = spawn("python3", [path.join(here, "model_api.py"), "--bind", modelAddress, "--port", "443", "--log", file("model.json"),
    "--cert", file("api.pem"), "--key", file("api.key")], { stdio: ["ignore", "pipe", trace ? "inherit" : "ignore"] });
  return new Promise((resolve, reject) => {
    server.on("exit", (code) => reject(new Error(`model_api.py exited (${code}); is port 443 on ${modelAddress} free, and are we root?`)));
    server.stdout.once("data", () => resolve(server));
  });
}

async function main() {
  if (process.getuid?.() !== 0) throw new Error("this test needs root (a private mount namespace for /etc/hosts, port 443)");
  makeCertificates();
  fs.writeFileSync(file("hosts"), `127.0.0.1 localhost\n${modelAddress} api.anthropic.com\n`);
  const model = await startModel();
  const ws = makeWorkspace({ "README.md": "# demo\n" }, { git: true });
  const before = snapshot(ws);
  const argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", `mount --bind "$0" /etc/hosts && exec "$@"`, file("hosts"),
    lockroom, "acp", "--kit", "claude", "--upstream-ca", file("ca.pem"), "--allow", `${modelAddress}:443`,
    // Claude Code sends its first-party API only a ToolSearch tool and loads the rest on demand;
    // the scripted model does not search, so the agent is asked to send every tool at once.
    "-e", "ENABLE_TOOL_SEARCH=false", "--", "claude-agent-acp"];
  const editor = new Editor({ argv, cwd: ws, workspace: ws, mode: "lockroom", trace, env: { ...process.env, ANTHROPIC_API_KEY: realKey } });
  const t0 = Date.now();
  const times = /** @type {Record<string, number>} */ ({});
  try {
    const init = await editor.initialize();
    times.initialize = Date.now() - t0;
    ok(init.agentInfo?.name === "lockroom", `lockroom answers initialize: ${JSON.stringify(init.agentInfo)}`);
    const { sessionId } = await editor.newSession(ws);
    times.sessionNew = Date.now() - t0;
    let reviewed = false;
    editor.policy = (req) => {
      if (req.toolCall.toolCallId.startsWith("lockroom-review-")) {
        eqTree(snapshot(ws), before, "the host workspace while the review is asked");
        reviewed = true;
        return choose(req, "allow_once");
      }
      return choose(req, "allow_once"); // the agent's own questions (Write, Bash)
    };
    const turnStart = Date.now();
    const answer = await editor.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Write the file, then copy it." }] });
    times.turn = Date.now() - turnStart;
    eq(answer.stopReason, "end_turn", "stopReason");
    const updates = editor.notifications.filter((n) => n.sessionId === sessionId).map((n) => n.update);
    const texts = updates.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => ("content" in u && u.content && "text" in u.content ? u.content.text : "")).join("");
    ok(texts.includes("Writing a file.") && texts.includes("All done"), `the model's text reached the editor: ${JSON.stringify(texts)}`);
    const write = updates.find((u) => u.sessionUpdate === "tool_call_update" && JSON.stringify(u).includes("from-model.txt") && "locations" in u && u.locations?.length);
    ok(write && "locations" in write && write.locations?.some((l) => l.path === path.join(ws, "from-model.txt")), `the Write tool call names the host path: ${JSON.stringify(write)}`);
    ok(reviewed, "the review was asked");
    const review = updates.find((u) => u.sessionUpdate === "tool_call" && u.toolCallId.startsWith("lockroom-review-"));
    if (!review || review.sessionUpdate !== "tool_call") throw new Error("no review tool call reached the editor");
    const reviewId = review.toolCallId;
    const diffs = (review.content ?? []).flatMap((c) => (c.type === "diff" ? [[c.path, c.newText]] : []));
    eq(diffs, [
      [path.join(ws, "from-model.txt"), "written by the scripted model\n"],
      [path.join(ws, "key-in-guest.txt"), `ANTHROPIC_API_KEY=${sentinel}\n`],
      [path.join(ws, "ran.txt"), "written by the scripted model\n"],
    ], "the review's diffs (the guest's ANTHROPIC_API_KEY is the sentinel)");
    await editor.until(() => editor.notifications.some((n) => n.update.sessionUpdate === "tool_call_update" && n.update.toolCallId === reviewId && n.update.status === "completed"), 10000, "the review applied");
    eq(fs.readFileSync(path.join(ws, "from-model.txt"), "utf8"), "written by the scripted model\n", "host from-model.txt after apply");
    eq(fs.readFileSync(path.join(ws, "key-in-guest.txt"), "utf8"), `ANTHROPIC_API_KEY=${sentinel}\n`, "host key-in-guest.txt after apply");
    const seen = JSON.parse(fs.readFileSync(file("model.json"), "utf8"));
    const steps = seen.map((/** @type {{step: string}} */ r) => r.step).filter((/** @type {string} */ s) => s !== "plain");
    eq(steps, ["write", "bash", "closing"], "the model's script ran in order");
    for (const r of seen) eq(r.key, realKey, `the key the model API got on ${r.step}`);
    ok(!JSON.stringify(seen).includes(sentinel), "the model API never saw the sentinel");
    eq(editor.unexpectedCalls, [], "fs/terminal requests that reached the editor");
    console.log(`ok - claude e2e: initialize ${times.initialize} ms, session/new ${times.sessionNew} ms (from start), turn ${times.turn} ms`);
  } finally {
    await editor.close(30000);
    model.kill();
    if (!trace) fs.rmSync(ws, { recursive: true, force: true });
    if (!trace) fs.rmSync(tmp, { recursive: true, force: true });
    else console.error(`kept ${tmp} (the model API log is model.json)`);
  }
}

main().catch((e) => {
  console.error(`not ok - claude e2e: ${e.stack ?? e}`);
  process.exit(1);
});
