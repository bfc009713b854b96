// Agent definitions: the built-ins, the `lockroom acp` command line, and settings entries checked
// one by one with messages that name the entry and every problem with it.
import assert from "node:assert/strict";
import { test } from "node:test";
import { agentsFromSettings, builtInAgents, lockroomAcpArgs, sharedAcpOptions } from "../src/core/acp/agents.js";

test("acp agents: the built-ins run the built-in kits' agents; every option reaches the command line in order", () => {
  assert.deepEqual(builtInAgents.map((a) => lockroomAcpArgs(a)), [
    ["acp", "--kit", "claude", "--", "claude-agent-acp"],
    ["acp", "--kit", "codex", "--", "codex-acp"],
  ]);
  assert.deepEqual(
    lockroomAcpArgs({
      name: "mine",
      kits: ["python", "./kits/extra.yaml"],
      argv: ["python3", "/opt/agent.py", "--", "-x"],
      allow: ["pypi.org", "files.pythonhosted.org:443"],
      env: { MODE: "fast", EMPTY: "" },
    }),
    ["acp", "--kit", "python", "--kit", "./kits/extra.yaml", "--allow", "pypi.org", "--allow", "files.pythonhosted.org:443",
     "-e", "MODE=fast", "-e", "EMPTY=", "--", "python3", "/opt/agent.py", "--", "-x"],
  );
  assert.deepEqual(lockroomAcpArgs({ name: "offline", kits: [], argv: ["agent"], noNetwork: true }), ["acp", "--no-network", "--", "agent"]);
  // The chat's own options come right after `acp`: the shared server, the folder the window's settings name.
  const shared = sharedAcpOptions(["--idle-exit", "2", "--server-dir", "/srv/a", "--server-dir=/srv/b", "--detached-grace", "30"]);
  assert.deepEqual(shared, ["--shared", "--server-dir", "/srv/a", "--server-dir=/srv/b"]);
  assert.deepEqual(lockroomAcpArgs({ name: "offline", kits: [], argv: ["agent"] }, sharedAcpOptions([])), ["acp", "--shared", "--", "agent"]);
});

test("acp agents: settings entries are checked one by one; an entry with problems is not offered and each problem is named", () => {
  const { agents, problems } = agentsFromSettings([
    { name: "Python agent", kits: ["python"], argv: ["python3", "/opt/agent.py"], allow: ["pypi.org", "[2001:db8::1]:8443", "*.example.com"], env: { A_1: "x" } },
    { name: "no argv" },
    "claude",
    { name: "twice", argv: ["a"] },
    { name: "twice", argv: ["b"] },
    { name: "bad", argv: ["a", ""], kits: ["Claude", "-x"], allow: ["host:99999", "two words"], env: { "1X": "v", Y: 3 }, noNetwork: "yes", extra: 1 },
    { name: "contradiction", argv: ["a"], allow: ["pypi.org"], noNetwork: true },
    { name: "Codex", kits: ["codex"], argv: ["codex-acp", "--verbose"] },
  ]);
  assert.deepEqual(agents, [
    { name: "Claude Code", kits: ["claude"], argv: ["claude-agent-acp"] },
    { name: "Python agent", kits: ["python"], argv: ["python3", "/opt/agent.py"], allow: ["pypi.org", "[2001:db8::1]:8443", "*.example.com"], env: { A_1: "x" } },
    { name: "twice", kits: [], argv: ["a"] },
    { name: "Codex", kits: ["codex"], argv: ["codex-acp", "--verbose"] },
  ]);
  assert.deepEqual(problems, [
    {
      index: 1,
      name: "no argv",
      message: `lockroom.agents[1] ("no argv") is not offered: "argv" must be the agent's command line in the guest, a non-empty list of non-empty strings (e.g. ["python3", "/opt/agent.py"]).`,
    },
    { index: 2, message: `lockroom.agents[2] is not offered: an agent must be an object with "name" and "argv", not the string "claude".` },
    { index: 4, name: "twice", message: `lockroom.agents[4] ("twice") is not offered: another entry before it is already named "twice".` },
    {
      index: 5,
      name: "bad",
      message:
        `lockroom.agents[5] ("bad") is not offered: "extra" is not a field of an agent (the fields are name, kits, argv, allow, env, noNetwork, terminalArgv); ` +
        `"argv" must be the agent's command line in the guest, a non-empty list of non-empty strings (e.g. ["python3", "/opt/agent.py"]); ` +
        `kit "Claude" is not a kit name (lower-case letters, digits and '-') or a path to a kit file; ` +
        `kit "-x" is not a kit name (lower-case letters, digits and '-') or a path to a kit file; ` +
        `"allow" entry "host:99999" is not HOST or HOST:PORT (a port from 1 to 65535; [IPv6]:PORT); ` +
        `"allow" entry "two words" is not HOST or HOST:PORT (a port from 1 to 65535; [IPv6]:PORT); ` +
        `"env" name "1X" is not a variable name (letters, digits and _, not starting with a digit); ` +
        `"env" value of Y must be a string, not a number; ` +
        `"noNetwork" must be true or false.`,
    },
    {
      index: 6,
      name: "contradiction",
      message: `lockroom.agents[6] ("contradiction") is not offered: "noNetwork" and "allow" contradict each other: with noNetwork there is no way out at all.`,
    },
  ]);
});

test("acp agents: no setting gives the built-ins; a setting that is not a list says so", () => {
  assert.deepEqual(agentsFromSettings(undefined), { agents: [...builtInAgents], problems: [] });
  assert.deepEqual(agentsFromSettings([]), { agents: [...builtInAgents], problems: [] });
  assert.deepEqual(agentsFromSettings({ name: "x" }, "lockroom.chat.agents"), {
    agents: [...builtInAgents],
    problems: [{ index: -1, message: "lockroom.chat.agents must be a list of agents; it is an object, so no agent of yours is offered." }],
  });
});
