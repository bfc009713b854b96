// LockroomError: lockroom's one error model (protocol/README.md, "Errors") as a JavaScript error.
// Clients branch on `kind` (data.kind of -32803) and `field` (data.field of -32602), never on
// the message, which is for people.
import { ResponseError } from "vscode-jsonrpc/node.js";

export type ErrorKind = "notFound" | "wrongState" | "limitExceeded" | "unavailable" | "invalidParams" | "cancelled" | "protocol";

export const enum Code {
  ParseError = -32700,
  InvalidRequest = -32600,
  MethodNotFound = -32601,
  InvalidParams = -32602,
  Internal = -32603,
  ServerNotInitialized = -32002,
  RequestCancelled = -32800,
  RequestFailed = -32803,
}

export class LockroomError extends Error {
  readonly code: number | undefined;
  readonly kind: ErrorKind;
  /** The params field at fault (invalid params only; "" for the params as a whole). */
  readonly field: string | undefined;

  constructor(message: string, options: { code?: number; kind: ErrorKind; field?: string }) {
    super(message);
    this.name = "LockroomError";
    this.code = options.code;
    this.kind = options.kind;
    this.field = options.field;
  }

  /** Any error from a request: a JSON-RPC error response becomes its kind; others pass through as `protocol`. */
  static from(e: unknown): LockroomError {
    if (e instanceof LockroomError) return e;
    if (e instanceof ResponseError) {
      const data = (e.data ?? {}) as { kind?: unknown; field?: unknown };
      const field = typeof data.field === "string" ? data.field : undefined;
      if (e.code === Code.RequestFailed && isKind(data.kind)) return new LockroomError(e.message, { code: e.code, kind: data.kind });
      if (e.code === Code.InvalidParams) return new LockroomError(e.message, { code: e.code, kind: "invalidParams", ...(field !== undefined ? { field } : {}) });
      if (e.code === Code.RequestCancelled) return new LockroomError(e.message, { code: e.code, kind: "cancelled" });
      return new LockroomError(e.message, { code: e.code, kind: "protocol" });
    }
    const message = e instanceof Error ? e.message : String(e);
    // vscode-jsonrpc's own failures (the connection closed or disposed under a pending request).
    return new LockroomError(message, { kind: "unavailable" });
  }
}

function isKind(k: unknown): k is ErrorKind {
  return k === "notFound" || k === "wrongState" || k === "limitExceeded" || k === "unavailable";
}
