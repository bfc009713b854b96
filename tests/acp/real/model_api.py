#!/usr/bin/env python3
"""A scripted Anthropic Messages API on the host's loopback, for the real-agent end-to-end test.

It speaks just enough of POST /v1/messages (streaming, text/event-stream) for the Claude Code
CLI inside claude-agent-acp: each request is answered from a script keyed by how far the
conversation is — first a tool use that writes a file, then one that runs a command, then a
closing text. Requests without tools (titles, summaries) get a short text. Everything it sees is
recorded in a JSON log (--log): the key each request carried, the tools offered, the tool
results it got back, so the test can check that the real key arrived (the guest only held the
sentinel) and what the agent did.

  model_api.py --port 0 --log FILE [--cert PEM --key PEM]   # prints "listening PORT" on stdout

With --cert and --key it serves HTTPS (the test makes a CA for it and hands that CA to lockroom
with --upstream-ca, so the egress proxy verifies it as it would the real API).
"""
import argparse
import ssl
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WRITTEN_PATH = "/workspace/from-model.txt"
WRITTEN_TEXT = "written by the scripted model\n"
# The second half collects ANTHROPIC_API_KEY from the environment of every process in the guest
# (the agent's included: Claude Code may scrub it from its Bash tool's own environment).
COMMAND = ("cat /workspace/from-model.txt > /workspace/ran.txt && "
           "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep '^ANTHROPIC_API_KEY=' | sort -u"
           " > /workspace/key-in-guest.txt")
CLOSING = "All done: wrote from-model.txt and ran a command."

lock = threading.Lock()
records = []


def sse(event, data):
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def message_events(blocks, stop_reason):
    """The Messages API's event sequence for one assistant message made of `blocks`."""
    out = [sse("message_start", {"type": "message_start", "message": {
        "id": "msg_scripted", "type": "message", "role": "assistant", "model": "claude-scripted",
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1}}})]
    for i, block in enumerate(blocks):
        if block["type"] == "text":
            out.append(sse("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}))
            out.append(sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": block["text"]}}))
        else:
            out.append(sse("content_block_start", {"type": "content_block_start", "index": i, "content_block": {
                "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}}))
            out.append(sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(block["input"])}}))
        out.append(sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                                     "usage": {"output_tokens": 5}}))
    out.append(sse("message_stop", {"type": "message_stop"}))
    return b"".join(out)


def tool_named(tools, suffix):
    """The offered tool whose name is `suffix` or ends in `__suffix` (the ACP agent's own tools
    are MCP tools such as mcp__acp__Write), preferring the MCP one."""
    names = [t.get("name", "") for t in tools]
    for n in names:
        if n.endswith("__" + suffix):
            return n
    return suffix if suffix in names else None


def tool_results(messages):
    out = []
    for m in messages:
        if m.get("role") == "user" and isinstance(m.get("content"), list):
            out += [c for c in m["content"] if c.get("type") == "tool_result"]
    return out


def answer(body):
    tools = body.get("tools") or []
    results = tool_results(body.get("messages", []))
    if not tools:
        return message_events([{"type": "text", "text": "Scripted title"}], "end_turn"), "plain"
    if len(results) == 0:
        name = tool_named(tools, "Write")
        if name:
            return message_events([{"type": "text", "text": "Writing a file."},
                                   {"type": "tool_use", "id": "toolu_write", "name": name,
                                    "input": {"file_path": WRITTEN_PATH, "content": WRITTEN_TEXT}}], "tool_use"), "write"
    if len(results) == 1:
        name = tool_named(tools, "Bash")
        if name:
            return message_events([{"type": "tool_use", "id": "toolu_bash", "name": name,
                                    "input": {"command": COMMAND, "description": "Copy the file"}}], "tool_use"), "bash"
    return message_events([{"type": "text", "text": CLOSING}], "end_turn"), "closing"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("model_api: " + (fmt % args) + "\n")

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            body = {}
        if not self.path.startswith("/v1/messages") or self.path.startswith("/v1/messages/count_tokens"):
            payload = json.dumps({"input_tokens": 10}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        stream, step = answer(body)
        with lock:
            records.append({"path": self.path, "key": self.headers.get("x-api-key", ""),
                            "authorization": self.headers.get("authorization", ""),
                            "tools": [t.get("name") for t in body.get("tools") or []],
                            "results": [json.dumps(r.get("content"))[:2000] for r in tool_results(body.get("messages", []))],
                            "step": step, "bodyBytes": len(raw)})
            with open(self.server.log_path, "w") as f:
                json.dump(records, f, indent=1)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(stream)))
        self.end_headers()
        self.wfile.write(stream)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--bind", default="127.0.0.1")
    parser.add_argument("--log", required=True)
    parser.add_argument("--cert")
    parser.add_argument("--key")
    args = parser.parse_args()
    server = ThreadingHTTPServer((args.bind, args.port), Handler)
    if args.cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.cert, args.key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    server.log_path = args.log
    print(f"listening {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
