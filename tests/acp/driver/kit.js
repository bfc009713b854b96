// @ts-check
// The kit the wrapper runs use, made at run time so it always holds the current scripted agent:
// a temp folder to be given as LOCKROOM_KIT_PATH, holding acp-scripted/kit.yaml, which extends
// the built-in `python` kit and writes the script to /opt/lockroom-test/scripted_agent.py.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

export const kitName = "acp-scripted";
export const guestScript = "/opt/lockroom-test/scripted_agent.py";

/** kit.yaml text for `script` (a literal block scalar: no quoting or escaping needed). @param {string} script */
export function kitYaml(script) {
  if (script.includes("\t")) throw new Error("the scripted agent must not contain tabs (YAML block scalar)");
  const body = script.replace(/\n$/, "").split("\n").map((line) => (line ? `      ${line}` : "")).join("\n");
  return [
    `name: ${kitName}`,
    "description: the scripted ACP agent of lockroom's tests (tests/acp/scripted_agent.py)",
    "extends: [python]",
    "files:",
    `  - path: ${guestScript}`,
    '    mode: "0755"',
    "    content: |",
    body,
    "",
  ].join("\n");
}

/** Writes the kit into a fresh temp folder and returns that folder. @param {string} scriptFile */
export function makeKitDir(scriptFile) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lockroom-acp-kits-"));
  fs.mkdirSync(path.join(dir, kitName));
  fs.writeFileSync(path.join(dir, kitName, "kit.yaml"), kitYaml(fs.readFileSync(scriptFile, "utf8")));
  return dir;
}
