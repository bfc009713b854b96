#!/usr/bin/env python3
"""A stand-in for `lockroom acp` that checks the driver's wrapper scenarios, nothing more.

    tests/acp/run --lockroom tests/acp/fake_lockroom.py --only lockroom/...

It is not lockroom and has no sandbox: the inner agent runs on the host, on a private copy of
the workspace that it is told is /workspace (the fake maps /workspace to the copy when it serves
the agent's fs/* and terminal/*, and maps /workspace to the host folder in what the editor sees).
It does what the driver asserts of the real bridge (README.md, "What the wrapper must do"): the
end-of-turn review as an "edit" tool call with one diff per changed file, then
session/request_permission; allow applies (a file the host changed meanwhile is a conflict,
reported and left alone), reject keeps the change for the next turn's review. A guest path
/opt/lockroom-test/X runs as the file X beside this one. `ps --json` lists nothing, so
lockroom/editor-disappears cannot pass against it.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
GUEST = "/workspace"


class Peer:
    """One ndjson JSON-RPC peer: writes under a lock, and matches replies to our requests."""

    def __init__(self, out, name):
        self.out, self.name, self.lock = out, name, threading.Lock()
        self.pending, self.next_id = {}, 0

    def send(self, msg):
        msg["jsonrpc"] = "2.0"
        with self.lock:
            self.out.write(json.dumps(msg) + "\n")
            self.out.flush()

    def request(self, method, params, on_reply):
        with self.lock:
            self.next_id += 1
            rid = "fake-%d" % self.next_id
            self.pending[rid] = on_reply
        self.send({"id": rid, "method": method, "params": params})

    def call(self, method, params):
        done, box = threading.Event(), {}
        self.request(method, params, lambda reply: (box.update(reply=reply), done.set()))
        done.wait()
        return box["reply"]

    def take_reply(self, msg):
        cb = self.pending.pop(msg.get("id"), None)
        if cb:
            cb(msg)


class Fake:
    def __init__(self, argv):
        argv = [os.path.join(HERE, a[len("/opt/lockroom-test/"):]) if a.startswith("/opt/lockroom-test/") else a for a in argv]
        self.inner = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.editor = Peer(sys.stdout, "editor")
        self.agent = Peer(self.inner.stdin, "agent")
        self.host = self.copy = None
        self.base = {}  # relative path -> text the review compares against (the host's at snapshot or last apply)
        self.terminals, self.dead, self.reviews = {}, None, 0

    # --- paths ---------------------------------------------------------------------------------
    def to_copy(self, p):
        return self.copy + p[len(GUEST):] if p == GUEST or p.startswith(GUEST + "/") else p

    def to_host(self, p):
        return self.host + p[len(GUEST):] if isinstance(p, str) and (p == GUEST or p.startswith(GUEST + "/")) else p

    def rewrite(self, update):
        if update.get("sessionUpdate") not in (None, "tool_call", "tool_call_update"):
            return update
        for loc in update.get("locations") or []:
            loc["path"] = self.to_host(loc["path"])
        for c in update.get("content") or []:
            if c.get("type") == "diff":
                c["path"] = self.to_host(c["path"])
        return update

    # --- editor -> fake ------------------------------------------------------------------------
    def from_editor(self, msg):
        method, params = msg.get("method"), msg.get("params") or {}
        if method is None:
            return self.editor.take_reply(msg)
        if self.dead is not None and "id" in msg:
            return self.editor.send({"id": msg["id"], "error": {"code": -32603, "message": "the agent exited with status %s" % self.dead}})
        if method == "initialize":
            params["clientCapabilities"] = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}
        if method == "session/new":
            self.host = params["cwd"]
            self.copy = tempfile.mkdtemp(prefix="fake-lockroom-")
            shutil.copytree(self.host, self.copy, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".git"))
            self.base = self.files(self.host)
            params["cwd"] = GUEST
        if "id" not in msg:
            return self.agent.send({"method": method, "params": params})
        rid = msg["id"]
        if method == "session/prompt":
            on_reply = lambda reply: threading.Thread(target=self.end_turn, args=(rid, params["sessionId"], reply)).start()
        else:
            on_reply = lambda reply: self.editor.send({"id": rid, **{k: v for k, v in reply.items() if k in ("result", "error")}})
        self.agent.request(method, params, on_reply)

    def files(self, root):
        out = {}
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if x != ".git"]
            for n in names:
                with open(os.path.join(d, n), encoding="utf-8", errors="replace") as f:
                    out[os.path.relpath(os.path.join(d, n), root)] = f.read()
        return out

    def end_turn(self, rid, sid, reply):
        if "result" in reply and self.copy:
            self.review(sid)
        self.editor.send({"id": rid, **{k: v for k, v in reply.items() if k in ("result", "error")}})

    def review(self, sid):
        now = self.files(self.copy)
        changed = sorted(p for p in now if self.base.get(p) != now[p])
        if not changed:
            return
        self.reviews += 1
        tid = "lockroom-review-%d" % self.reviews
        host_now = self.files(self.host)
        diffs = [{"type": "diff", "path": os.path.join(self.host, p), "oldText": host_now.get(p), "newText": now[p]} for p in changed]
        self.editor.send({"method": "session/update", "params": {"sessionId": sid, "update": {
            "sessionUpdate": "tool_call", "toolCallId": tid, "title": "Apply the sandbox's changes to the workspace?",
            "kind": "edit", "status": "pending", "content": diffs, "locations": [{"path": d["path"]} for d in diffs]}}})
        options = [{"optionId": "apply", "name": "Apply", "kind": "allow_once"}, {"optionId": "keep", "name": "Not now", "kind": "reject_once"}]
        answer = self.editor.call("session/request_permission", {"sessionId": sid, "toolCall": {"toolCallId": tid}, "options": options})
        outcome = (answer.get("result") or {}).get("outcome") or {}
        if outcome.get("optionId") != "apply":
            return self.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tid, "status": "failed"})
        host_now, conflicts = self.files(self.host), []
        for p in changed:
            if host_now.get(p) != self.base.get(p):
                conflicts.append(os.path.join(self.host, p))
                continue
            os.makedirs(os.path.dirname(os.path.join(self.host, p)), exist_ok=True)
            with open(os.path.join(self.host, p), "w", encoding="utf-8") as f:
                f.write(now[p])
            self.base[p] = now[p]
        update = {"sessionUpdate": "tool_call_update", "toolCallId": tid, "status": "failed" if conflicts else "completed"}
        if conflicts:
            text = "conflict: changed on the host since the snapshot, nothing written: " + ", ".join(conflicts)
            update["content"] = [{"type": "content", "content": {"type": "text", "text": text}}]
        self.update(sid, update)

    def update(self, sid, update):
        self.editor.send({"method": "session/update", "params": {"sessionId": sid, "update": update}})

    # --- agent -> fake -------------------------------------------------------------------------
    def from_agent(self, msg):
        method, params = msg.get("method"), msg.get("params") or {}
        if method is None:
            return self.agent.take_reply(msg)
        if method == "session/update":
            return self.editor.send({"method": method, "params": {**params, "update": self.rewrite(params["update"])}})
        if method == "session/request_permission":
            rid = msg["id"]
            params["toolCall"] = self.rewrite(params["toolCall"])
            return self.editor.request(method, params, lambda r: self.agent.send({"id": rid, **{k: v for k, v in r.items() if k in ("result", "error")}}))
        threading.Thread(target=self.serve, args=(msg,)).start()

    def serve(self, msg):
        method, params, rid = msg["method"], msg.get("params") or {}, msg.get("id")
        try:
            result = self.serve_one(method, params)
            self.agent.send({"id": rid, "result": result})
        except OSError as e:
            self.agent.send({"id": rid, "error": {"code": -32002, "message": str(e)}})

    def serve_one(self, method, p):
        if method == "fs/read_text_file":
            with open(self.to_copy(p["path"]), encoding="utf-8") as f:
                return {"content": f.read()}
        if method == "fs/write_text_file":
            path = self.to_copy(p["path"])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(p["content"])
            return {}
        if method == "terminal/create":
            cwd = self.to_copy(p.get("cwd") or GUEST)
            proc = subprocess.Popen([p["command"]] + p.get("args", []), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            tid = "fake-term-%d" % (len(self.terminals) + 1)
            self.terminals[tid] = (proc, p.get("outputByteLimit"))
            return {"terminalId": tid}
        proc, limit = self.terminals[p["terminalId"]]
        if method == "terminal/wait_for_exit":
            proc.wait()
            return {"exitCode": proc.returncode, "signal": None}
        if method == "terminal/output":
            data = proc.stdout.read() if proc.poll() is not None else b""
            truncated = limit is not None and len(data) > limit
            if truncated:
                data = data[len(data) - limit:]
                while data and (data[0] & 0xC0) == 0x80:
                    data = data[1:]
            return {"output": data.decode("utf-8", "replace"), "truncated": truncated}
        if method in ("terminal/release", "terminal/kill"):
            proc.kill()
            return {}
        raise OSError("unknown method " + method)

    def run(self):
        def agent_loop():
            for line in self.inner.stdout:
                if line.strip():
                    self.from_agent(json.loads(line))
            self.dead = self.inner.wait()
            for cb in list(self.agent.pending.values()):
                cb({"error": {"code": -32603, "message": "the agent exited with status %s" % self.dead}})
        threading.Thread(target=agent_loop, daemon=True).start()
        for line in sys.stdin:
            if line.strip():
                self.from_editor(json.loads(line))
        self.inner.kill()
        if self.copy:
            shutil.rmtree(self.copy, ignore_errors=True)


def main():
    args = sys.argv[1:]
    if args[:2] == ["ps", "--json"]:
        print(json.dumps({"sandboxes": []}))
        return 0
    if not args or args[0] != "acp" or "--" not in args:
        print("fake_lockroom: usage: fake_lockroom.py acp [--kit K] -- AGENT ARGS...", file=sys.stderr)
        return 2
    Fake(args[args.index("--") + 1:]).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
