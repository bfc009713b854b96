// ErrorKind: what a failed request means to a client (protocol/README.md, "Errors"). The first
// four are -32803's data.kind; the rest are the other codes, and the connection itself failing.
package dev.lockroom.core;

public enum ErrorKind {
  /** Something the request names does not exist. */
  NOT_FOUND,
  /** It exists, but not in a state that allows the request. */
  WRONG_STATE,
  /** A configured bound was hit. */
  LIMIT_EXCEEDED,
  /** Something needed is missing, gone or failing (also: the server went away); retrying may work. */
  UNAVAILABLE,
  /** -32602: a params field is wrong; LockroomException.field() names it. */
  INVALID_PARAMS,
  /** -32800: the request was cancelled. */
  CANCELLED,
  /** Any other JSON-RPC error, or a reply this client cannot read: a bug on one side. */
  PROTOCOL;

  /** The kind for -32803's data.kind, or null for one this client does not know. */
  public static ErrorKind ofWire(String kind) {
    if (kind == null) return null;
    switch (kind) {
      case "notFound":
        return NOT_FOUND;
      case "wrongState":
        return WRONG_STATE;
      case "limitExceeded":
        return LIMIT_EXCEEDED;
      case "unavailable":
        return UNAVAILABLE;
      default:
        return null;
    }
  }
}
