#!/usr/bin/env node
// The Node peer of the request round-trip benchmark (bench/run-rpc-roundtrip.sh).
//
// The smallest honest JSON-RPC server an editor extension author would write with
// vscode-jsonrpc, the library VS Code's own language clients and servers use: Content-Length
// framing on stdin/stdout, LSP's lifecycle, and `lockroom/echo` answering with its params, the
// same surface the benchmark exercises on `lockroom serve --stdio`.
'use strict';

const { createMessageConnection, StreamMessageReader, StreamMessageWriter } = require('vscode-jsonrpc/node');

const connection = createMessageConnection(new StreamMessageReader(process.stdin), new StreamMessageWriter(process.stdout));

let shutDown = false;
connection.onRequest('initialize', () => ({ capabilities: {} }));
connection.onNotification('initialized', () => {});
connection.onRequest('lockroom/echo', (params) => params);
connection.onRequest('shutdown', () => {
  shutDown = true;
  return null;
});
// As LSP asks: exit code 0 after shutdown, 1 otherwise.
connection.onNotification('exit', () => process.exit(shutDown ? 0 : 1));
connection.onClose(() => process.exit(shutDown ? 0 : 1));
connection.listen();
