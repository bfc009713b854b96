#!/usr/bin/env python3
"""Writes the seed corpus of fuzz-rpc into corpus/rpc/ (see fuzz_rpc.cpp for the input layout).

Each seed: 1 flag byte (bit 0: ndjson), 8 bytes of chunk/clock table, then the editor's bytes.
Run it from anywhere; it rewrites the seeds in place.
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "rpc")


def msg(**fields):
    fields = {"jsonrpc": "2.0", **fields}
    return json.dumps(fields, separators=(",", ":")).encode()


def req(i, method, params=None):
    return msg(id=i, method=method, **({} if params is None else {"params": params}))


def note(method, params=None):
    return msg(method=method, **({} if params is None else {"params": params}))


def cl(*bodies):
    return b"".join(b"Content-Length: %d\r\n\r\n%s" % (len(b), b) for b in bodies)


def nd(*bodies):
    return b"".join(b + b"\n" for b in bodies)


INIT = req(1, "initialize", {"processId": 1, "clientInfo": {"name": "fuzz"},
                             "capabilities": {"window": {"workDoneProgress": True}}})

SESSION = [
    req(0, "lockroom/echo"),  # before initialize: -32002
    INIT,
    note("initialized"),
    req(2, "lockroom/echo", {"text": "hi"}),
    req("w", "test/wait", {"ms": 30}),
    note("$/cancelRequest", {"id": "w"}),
    req(3, "test/wait", {"ms": 3}),
    req(3, "test/wait"),  # duplicate while in flight
    req(4, "shutdown"),
    req(5, "lockroom/echo"),  # after shutdown: -32600
    note("exit"),
]

FAULTS = [
    INIT,
    req(2, "test/doubleReply"),
    req(3, "test/dropReply"),
    req(4, "test/throw"),
    req(5, "no/such/method"),
    b'{"jsonrpc":"1.0","id":6,"method":"m"}',
    b'{"jsonrpc":"2.0","id":7.0,"method":"lockroom/echo"}',
    b'{"jsonrpc":"2.0","id":{"x":1},"method":"m"}',
    b"[1,2]",
    b"not json",
    b'{"jsonrpc":"2.0","id":8,"method":"m","params":"str"}',
    note("test/notify", [1, "two"]),
    req(9, "lockroom/echo", {"big": 1.5e300, "small": -2.5e-300, "int": -9223372036854775808}),
]

CALLS = [
    INIT,
    req(10, "test/callClient", {"q": 1}),
    msg(id=1, result={"answer": 42}),
    req(11, "test/callClient"),
    msg(id=2, error={"code": -32601, "message": "no"}),
    req(12, "test/callClient"),
    req(13, "test/callClient"),
    req(14, "test/callClient"),
    req(15, "test/callClient"),  # over the bound of 3
    msg(id=99, result=None),
    msg(id=3, error={"code": "bad"}),
    note("test/failCalls"),
    req(16, "test/callClient"),
    req(17, "test/wait", {"ms": 900}),
    note("test/abandon"),
]

SEEDS = {
    "cl-session": b"\x00" + bytes([5, 0x83, 16, 1, 64, 7, 34, 9]) + cl(*SESSION),
    "cl-session-bytewise": b"\x00" + bytes([0] * 8) + cl(*SESSION),
    "cl-faults": b"\x00" + bytes([31, 2, 0x81, 11, 3, 17, 0x7f, 1]) + cl(*FAULTS),
    "cl-calls": b"\x00" + bytes([0x80, 9, 21, 40, 3, 60, 13, 2]) + cl(*CALLS),
    "cl-headers": b"\x00" + bytes([3, 5, 7, 11, 13, 17, 19, 23])
    + b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\ncontent-length: 2\r\n\r\n{}"
    + b"\r\n\r\nContent-Length: 5\r\nContent-Type: text/plain; charset=latin1\r\n\r\n{\"a\"}"
    + b"Content-Length: x\r\n\r\n"
    + b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n"
    + b"Content-Length: 600\r\n\r\n" + b"x" * 600
    + b"Content-Length: 0\n\n"
    + cl(INIT, req(2, "lockroom/echo", ["\u00e9"])),
    "cl-junk-header": b"\x00" + bytes([0x8f, 0x8f, 0x8f, 0x8f, 1, 2, 3, 4])
    + b"X-Junk: " + b"j" * 12000 + cl(INIT, req(2, "lockroom/echo")),
    "nd-session": b"\x01" + bytes([4, 0x82, 9, 1, 30, 2, 5, 70]) + nd(*SESSION),
    "nd-faults": b"\x01" + bytes([1, 1, 2, 3, 5, 8, 13, 21])
    + nd(*FAULTS) + b"\r\n\n   \n" + b"y" * 700 + b"\n" + nd(req(9, "lockroom/echo")),
}

os.makedirs(OUT, exist_ok=True)
for name, data in SEEDS.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
    print(f"{name}: {len(data)} bytes")
