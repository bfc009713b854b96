// LockroomException: lockroom's one error model as a Java exception: the JSON-RPC code, the kind
// a client branches on (data.kind of -32803), and the params field at fault (data.field of
// -32602). The message is for people and is lockroom's own. Futures of the client fail with it;
// from() unwraps the CompletionException around it.
package dev.lockroom.core;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

public final class LockroomException extends RuntimeException {
  public static final int kParseError = -32700;
  public static final int kInvalidRequest = -32600;
  public static final int kMethodNotFound = -32601;
  public static final int kInvalidParams = -32602;
  public static final int kInternalError = -32603;
  public static final int kServerNotInitialized = -32002;
  public static final int kRequestCancelled = -32800;
  public static final int kRequestFailed = -32803;

  private final Integer code;
  private final ErrorKind kind;
  private final String field;
  private final JsonElement data;

  public LockroomException(String message, Integer code, ErrorKind kind, String field, JsonElement data) {
    super(message);
    this.code = code;
    this.kind = kind;
    this.field = field;
    this.data = data;
  }

  public LockroomException(String message, ErrorKind kind) {
    this(message, null, kind, null, null);
  }

  /** A JSON-RPC error object as lockroom sent it. */
  public static LockroomException ofResponse(JsonObject error) {
    int code = error.has("code") && error.get("code").isJsonPrimitive() ? error.get("code").getAsInt() : 0;
    String message = error.has("message") && error.get("message").isJsonPrimitive() ? error.get("message").getAsString() : "error " + code;
    JsonElement data = error.get("data");
    String wireKind = null;
    String field = null;
    if (data != null && data.isJsonObject()) {
      JsonObject d = data.getAsJsonObject();
      if (d.has("kind") && d.get("kind").isJsonPrimitive()) wireKind = d.get("kind").getAsString();
      if (d.has("field") && d.get("field").isJsonPrimitive()) field = d.get("field").getAsString();
    }
    ErrorKind kind;
    if (code == kRequestFailed && ErrorKind.ofWire(wireKind) != null) kind = ErrorKind.ofWire(wireKind);
    else if (code == kInvalidParams) kind = ErrorKind.INVALID_PARAMS;
    else if (code == kRequestCancelled) kind = ErrorKind.CANCELLED;
    else kind = ErrorKind.PROTOCOL;
    return new LockroomException(message, code, kind, kind == ErrorKind.INVALID_PARAMS ? field : null, data);
  }

  /** Any failure of a request as a LockroomException (CompletionException and ExecutionException unwrapped). */
  public static LockroomException from(Throwable t) {
    while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) t = t.getCause();
    if (t instanceof LockroomException e) return e;
    return new LockroomException(String.valueOf(t.getMessage() != null ? t.getMessage() : t), null, ErrorKind.UNAVAILABLE, null, null);
  }

  /** The JSON-RPC code; null when the failure is this client's (the server gone, a spawn failure). */
  public Integer code() {
    return code;
  }

  public ErrorKind kind() {
    return kind;
  }

  /** The params field at fault (INVALID_PARAMS only; "" for the params as a whole), else null. */
  public String field() {
    return field;
  }

  /** The error's data as sent, or null. */
  public JsonElement data() {
    return data;
  }
}
