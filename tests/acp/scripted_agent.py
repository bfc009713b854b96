#!/usr/bin/env python3
"""A scripted ACP v1 agent for lockroom's tests (Python 3 standard library only).

It speaks the Agent Client Protocol (newline-delimited JSON-RPC 2.0) on stdin/stdout and logs
to stderr. It has no model: the text of each `session/prompt` is a JSON *script*, a list of
steps that the agent performs in order, so a test decides exactly what the agent does.

Steps (one key names the step; paths may be absolute or relative to the session's cwd):
  {"say": "text"}                 an agent_message_chunk
  {"think": "text"}               an agent_thought_chunk
  {"plan": ["a", "b"]}            a plan update (strings, or full PlanEntry objects)
  {"read": "x"}                   fs/read_text_file through the client (tool call kind "read");
                                  the content comes back as a message chunk, exactly
  {"write": "x", "text": "..."}   fs/read_text_file for the old text (null if that fails), a tool
                                  call kind "edit" with a diff, fs/write_text_file, completed
  {"run": "cmd", "args": [...], "outputByteLimit": N}
                                  terminal/create, a tool call kind "execute" embedding the
                                  terminal, wait_for_exit, output, release; then a message chunk
                                  "exit=CODE signal=SIG truncated=BOOL\n" (JSON values: exit=3 signal=null
                                  truncated=true) followed by the output
  {"shell": "command line"}       the same, as `sh -c "command line"`
  {"ask": "title"}                session/request_permission with allow_once / reject_once;
                                  a message chunk "permission: allow|reject|cancelled"
  {"sleep": ms}                   waits; a session/cancel meanwhile ends the turn "cancelled"
  {"crash": code}                 exits the process with that code at once
  {"echo_cwd": true}              a message chunk holding the cwd session/new was given
  {"stop": "max_tokens"}          ends the turn now with that stopReason
An unknown step, or a prompt that is not a JSON list, is refused with a message chunk naming
what is wrong, and the turn ends "end_turn". Every tool call carries `locations` with absolute
paths as this agent sees them. A session/cancel is honoured between steps too.

Also: session/new offers the modes "default" and "plan" (session/set_mode switches and sends
current_mode_update), and the extension request `_scripted/state` returns what the agent
knows ({sessions: [{sessionId, cwd, mode}], clientCapabilities}).
"""
import json
import os
import posixpath
import queue
import sys
import threading
import time

KNOWN_STEPS = ["say", "think", "plan", "read", "write", "run", "shell", "ask", "sleep", "crash", "echo_cwd", "stop"]
STOP_REASONS = ["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]


def log(*parts):
    print("scripted-agent:", *parts, file=sys.stderr, flush=True)


class RpcError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class Cancelled(Exception):
    pass


class Connection:
    """JSON-RPC over stdio: a reader thread routes replies to waiting callers and cancels to
    their session; requests and other notifications go to the main loop's queue."""

    def __init__(self):
        self.write_lock = threading.Lock()
        self.pending = {}  # id -> [event, reply]
        self.pending_lock = threading.Lock()
        self.next_id = 0
        self.inbox = queue.Queue()
        self.seq = 0  # arrival order of messages, so a cancel is matched to the turn it followed
        self.cancelled = {}  # session id -> arrival number of a session/cancel not yet consumed

    def send(self, message):
        message["jsonrpc"] = "2.0"
        with self.write_lock:
            sys.stdout.write(json.dumps(message) + "\n")
            sys.stdout.flush()

    def notify(self, method, params):
        self.send({"method": method, "params": params})

    def request(self, method, params, session_id=None):
        """Sends a request and waits for its reply; raises RpcError on an error reply. While
        waiting, a session/cancel for session_id is not acted on here (the step checks after)."""
        with self.pending_lock:
            self.next_id += 1
            rid = self.next_id
            slot = [threading.Event(), None]
            self.pending[rid] = slot
        self.send({"id": rid, "method": method, "params": params})
        slot[0].wait()
        reply = slot[1]
        if reply is None:
            raise RpcError(-32603, "the client went away")
        if "error" in reply:
            err = reply["error"]
            raise RpcError(err.get("code", -32603), err.get("message", "error"))
        return reply.get("result")

    def read_forever(self):
        for line in sys.stdin:
            line = line.strip()
            if not line:
                continue
            try:
                message = json.loads(line)
            except ValueError:
                self.send({"id": None, "error": {"code": -32700, "message": "parse error"}})
                continue
            self.seq += 1
            message["_seq"] = self.seq
            if "method" not in message:
                with self.pending_lock:
                    slot = self.pending.pop(message.get("id"), None)
                if slot:
                    slot[1] = message
                    slot[0].set()
                continue
            if message["method"] == "session/cancel":
                sid = (message.get("params") or {}).get("sessionId")
                log("cancel", sid)
                self.cancelled[sid] = self.seq
                continue
            self.inbox.put(message)
        log("stdin closed")
        with self.pending_lock:
            for slot in self.pending.values():
                slot[0].set()
        self.inbox.put(None)


class Agent:
    def __init__(self, conn):
        self.conn = conn
        self.sessions = {}
        self.client_capabilities = {}
        self.next_tool = 0

    # --- requests from the client -------------------------------------------------------------
    def handle(self, method, params, seq=0):
        if method == "initialize":
            self.client_capabilities = params.get("clientCapabilities") or {}
            return {
                "protocolVersion": 1,
                "agentInfo": {"name": "scripted-agent", "version": "1.0.0"},
                "agentCapabilities": {"loadSession": False, "promptCapabilities": {"embeddedContext": True}},
                "authMethods": [],
            }
        if method == "session/new":
            sid = "scripted-%d" % (len(self.sessions) + 1)
            self.sessions[sid] = {"cwd": params.get("cwd", ""), "mode": "default"}
            log("session", sid, "cwd", params.get("cwd"))
            modes = [{"id": "default", "name": "Default"}, {"id": "plan", "name": "Plan"}]
            return {"sessionId": sid, "modes": {"currentModeId": "default", "availableModes": modes}}
        if method == "session/set_mode":
            session = self.session(params)
            if params.get("modeId") not in ("default", "plan"):
                raise RpcError(-32602, "unknown mode %r; the modes are default, plan" % params.get("modeId"))
            session["mode"] = params["modeId"]
            self.update(params["sessionId"], {"sessionUpdate": "current_mode_update", "currentModeId": params["modeId"]})
            return {}
        if method == "session/prompt":
            self.session(params)
            return {"stopReason": self.prompt(params["sessionId"], params.get("prompt") or [], seq)}
        if method == "_scripted/state":
            sessions = [{"sessionId": k, "cwd": v["cwd"], "mode": v["mode"]} for k, v in self.sessions.items()]
            return {"sessions": sessions, "clientCapabilities": self.client_capabilities}
        raise RpcError(-32601, "method not found: %s" % method)

    def session(self, params):
        sid = params.get("sessionId")
        if sid not in self.sessions:
            raise RpcError(-32002, "session not found: %r" % sid)
        return self.sessions[sid]

    # --- helpers ------------------------------------------------------------------------------
    def update(self, sid, update):
        self.conn.notify("session/update", {"sessionId": sid, "update": update})

    def say(self, sid, text, kind="agent_message_chunk"):
        self.update(sid, {"sessionUpdate": kind, "content": {"type": "text", "text": text}})

    def tool_id(self):
        self.next_tool += 1
        return "tool-%d" % self.next_tool

    def path(self, sid, p):
        return posixpath.normpath(posixpath.join(self.sessions[sid]["cwd"], p))

    def check_cancel(self, sid):
        if self.conn.cancelled.pop(sid, None) is not None:
            raise Cancelled()

    # --- a prompt turn ------------------------------------------------------------------------
    def prompt(self, sid, blocks, seq):
        if self.conn.cancelled.get(sid, seq) < seq:  # a cancel from before this prompt was sent
            del self.conn.cancelled[sid]
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        try:
            steps = json.loads(text)
        except ValueError as e:
            self.say(sid, "scripted-agent: the prompt is not a JSON script (%s); send a list of steps: %s" % (e, ", ".join(KNOWN_STEPS)))
            return "end_turn"
        if not isinstance(steps, list):
            self.say(sid, "scripted-agent: the prompt must be a JSON list of steps, got %s" % type(steps).__name__)
            return "end_turn"
        try:
            for step in steps:
                self.check_cancel(sid)
                name = next((k for k in KNOWN_STEPS if isinstance(step, dict) and k in step), None)
                if name is None:
                    self.say(sid, "scripted-agent: unknown step %s; known steps: %s" % (json.dumps(step), ", ".join(KNOWN_STEPS)))
                    return "end_turn"
                if name == "stop":
                    if step["stop"] in STOP_REASONS:
                        return step["stop"]
                    self.say(sid, "scripted-agent: unknown stopReason %s; known: %s" % (json.dumps(step["stop"]), ", ".join(STOP_REASONS)))
                    return "end_turn"
                getattr(self, "step_" + name)(sid, step)
            self.check_cancel(sid)
        except Cancelled:
            log("turn cancelled", sid)
            return "cancelled"
        return "end_turn"

    def step_say(self, sid, step):
        self.say(sid, str(step["say"]))

    def step_think(self, sid, step):
        self.say(sid, str(step["think"]), "agent_thought_chunk")

    def step_echo_cwd(self, sid, step):
        self.say(sid, self.sessions[sid]["cwd"])

    def step_plan(self, sid, step):
        entries = [e if isinstance(e, dict) else {"content": str(e), "priority": "medium", "status": "pending"} for e in step["plan"]]
        self.update(sid, {"sessionUpdate": "plan", "entries": entries})

    def step_read(self, sid, step):
        path = self.path(sid, step["read"])
        tid = self.tool_id()
        self.update(sid, {"sessionUpdate": "tool_call", "toolCallId": tid, "title": "Read " + path, "kind": "read",
                          "status": "in_progress", "locations": [{"path": path}], "rawInput": {"path": path}})
        try:
            content = self.conn.request("fs/read_text_file", {"sessionId": sid, "path": path})["content"]
        except RpcError as e:
            self.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tid, "status": "failed"})
            self.say(sid, "error: fs/read_text_file %s: %s" % (path, e))
            return
        self.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tid, "status": "completed",
                          "content": [{"type": "content", "content": {"type": "text", "text": content}}]})
        self.say(sid, content)

    def step_write(self, sid, step):
        path = self.path(sid, step["write"])
        text = str(step.get("text", ""))
        try:
            old = self.conn.request("fs/read_text_file", {"sessionId": sid, "path": path})["content"]
        except RpcError:
            old = None
        tid = self.tool_id()
        self.update(sid, {"sessionUpdate": "tool_call", "toolCallId": tid, "title": "Write " + path, "kind": "edit",
                          "status": "in_progress", "locations": [{"path": path}],
                          "content": [{"type": "diff", "path": path, "oldText": old, "newText": text}],
                          "rawInput": {"path": path, "content": text}})
        try:
            self.conn.request("fs/write_text_file", {"sessionId": sid, "path": path, "content": text})
        except RpcError as e:
            self.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tid, "status": "failed"})
            self.say(sid, "error: fs/write_text_file %s: %s" % (path, e))
            return
        self.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tid, "status": "completed"})

    def step_shell(self, sid, step):
        self.terminal(sid, "sh", ["-c", str(step["shell"])], step.get("outputByteLimit"), "Shell: " + str(step["shell"]))

    def step_run(self, sid, step):
        args = [str(a) for a in step.get("args", [])]
        self.terminal(sid, str(step["run"]), args, step.get("outputByteLimit"), "Run " + " ".join([str(step["run"])] + args))

    def terminal(self, sid, command, args, limit, title):
        cwd = self.sessions[sid]["cwd"]
        params = {"sessionId": sid, "command": command, "args": args, "cwd": cwd}
        if limit is not None:
            params["outputByteLimit"] = int(limit)
        tid = self.tool_id()
        try:
            term = self.conn.request("terminal/create", params)["terminalId"]
        except RpcError as e:
            self.say(sid, "error: terminal/create %s: %s" % (command, e))
            return
        self.update(sid, {"sessionUpdate": "tool_call", "toolCallId": tid, "title": title, "kind": "execute",
                          "status": "in_progress", "locations": [{"path": cwd}],
                          "content": [{"type": "terminal", "terminalId": term}], "rawInput": {"command": command, "args": args}})
        ref = {"sessionId": sid, "terminalId": term}
        exit_status = self.conn.request("terminal/wait_for_exit", ref)
        out = self.conn.request("terminal/output", ref)
        self.conn.request("terminal/release", ref)
        code, sig = exit_status.get("exitCode"), exit_status.get("signal")
        self.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tid,
                          "status": "completed" if code == 0 else "failed",
                          "rawOutput": {"exitCode": code, "signal": sig, "truncated": out.get("truncated", False)}})
        self.say(sid, "exit=%s signal=%s truncated=%s\n%s" % (json.dumps(code), json.dumps(sig), json.dumps(bool(out.get("truncated"))), out["output"]))

    def step_ask(self, sid, step):
        tid = self.tool_id()
        title = str(step["ask"])
        cwd = self.sessions[sid]["cwd"]
        self.update(sid, {"sessionUpdate": "tool_call", "toolCallId": tid, "title": title, "kind": "other",
                          "status": "pending", "locations": [{"path": cwd}]})
        options = [{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                   {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]
        reply = self.conn.request("session/request_permission",
                                  {"sessionId": sid, "toolCall": {"toolCallId": tid, "title": title}, "options": options})
        outcome = reply.get("outcome") or {}
        chosen = outcome.get("optionId") if outcome.get("outcome") == "selected" else "cancelled"
        self.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tid,
                          "status": "completed" if chosen == "allow" else "failed"})
        self.say(sid, "permission: %s" % chosen)
        if chosen == "cancelled":
            raise Cancelled()

    def step_sleep(self, sid, step):
        deadline = time.monotonic() + float(step["sleep"]) / 1000.0
        while time.monotonic() < deadline:
            self.check_cancel(sid)
            time.sleep(0.01)

    def step_crash(self, sid, step):
        log("crashing with exit code", step["crash"])
        sys.stdout.flush()
        os._exit(int(step["crash"]))


def main():
    conn = Connection()
    agent = Agent(conn)
    threading.Thread(target=conn.read_forever, daemon=True).start()
    while True:
        message = conn.inbox.get()
        if message is None:
            return 0
        method, params, rid = message["method"], message.get("params") or {}, message.get("id")
        try:
            result = agent.handle(method, params, message["_seq"])
            if rid is not None:
                conn.send({"id": rid, "result": result})
        except RpcError as e:
            if rid is not None:
                conn.send({"id": rid, "error": {"code": e.code, "message": str(e)}})
        except (KeyError, TypeError, ValueError) as e:
            log("bad params for", method, repr(e))
            if rid is not None:
                conn.send({"id": rid, "error": {"code": -32602, "message": "invalid params for %s: %r" % (method, e)}})


if __name__ == "__main__":
    sys.exit(main())
