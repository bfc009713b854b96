// JsonRpcConnection: JSON-RPC 2.0 over a pair of byte streams with Content-Length framing, both
// ways: requests this side sends (ids, pending futures, $/cancelRequest), notifications, and
// requests the other side sends (answered by a registered handler, cancellable by the peer).
//
// Threads: one reader thread turns frames into messages; every message is then handled on one
// event thread, in the order it arrived — replies complete their futures there, notification
// listeners and request handlers run there. So a listener sees `process/output` and the reply to
// `process/start` in wire order. Listeners must not block that thread waiting for a reply (it
// would wait for itself): chain on the future instead. Writes come from any thread.
package dev.lockroom.core.rpc;

import com.google.gson.JsonElement;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import com.google.gson.JsonPrimitive;
import dev.lockroom.core.ErrorKind;
import dev.lockroom.core.Json;
import dev.lockroom.core.LockroomException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiFunction;
import java.util.function.Consumer;

public final class JsonRpcConnection {
  /** What a handler of a peer's request returns: the result (any Gson-writable value) or a failure. */
  public interface RequestHandler extends BiFunction<JsonElement, CancelToken, CompletableFuture<?>> {}

  private record Pending(String method, CompletableFuture<JsonElement> future) {}

  private static final int kMaxMessageBytes = 256 << 20;

  private final InputStream in;
  private final OutputStream out;
  private final String name;
  private final AtomicLong nextId = new AtomicLong(1);
  private final Map<Long, Pending> pending = new ConcurrentHashMap<>();
  private final Map<String, List<Consumer<JsonElement>>> listeners = new ConcurrentHashMap<>();
  private final Map<String, RequestHandler> handlers = new ConcurrentHashMap<>();
  private final Map<String, CancelToken> incoming = new ConcurrentHashMap<>();
  private final List<Consumer<Throwable>> readEndListeners = new CopyOnWriteArrayList<>();
  private final ExecutorService events;
  private volatile Thread eventThread;
  private volatile LockroomException ended;

  /** `name` names the threads (and the peer, in messages). */
  public JsonRpcConnection(InputStream in, OutputStream out, String name) {
    this.in = in;
    this.out = out;
    this.name = name;
    this.events = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, name + "-events");
      t.setDaemon(true);
      eventThread = t;
      return t;
    });
  }

  /** Starts reading; `onReadEnd` runs (on the reader thread) when the stream ends or breaks, with the cause or null. */
  public void listen(Consumer<Throwable> onReadEnd) {
    readEndListeners.add(onReadEnd);
    Thread reader = new Thread(this::readLoop, name + "-reader");
    reader.setDaemon(true);
    reader.start();
  }

  /** True on the thread that runs listeners and completes replies (where blocking on a reply deadlocks). */
  public boolean onEventThread() {
    return Thread.currentThread() == eventThread;
  }

  /** Sends a request; the future completes on the event thread with the raw result, or fails with a LockroomException. */
  public CompletableFuture<JsonElement> request(String method, JsonElement params, CancelToken cancel) {
    CompletableFuture<JsonElement> future = new CompletableFuture<>();
    LockroomException gone = ended;
    if (gone != null) {
      future.completeExceptionally(new LockroomException(gone.getMessage() + "; " + method + " was not sent", ErrorKind.UNAVAILABLE));
      return future;
    }
    long id = nextId.getAndIncrement();
    pending.put(id, new Pending(method, future));
    JsonObject msg = new JsonObject();
    msg.addProperty("jsonrpc", "2.0");
    msg.addProperty("id", id);
    msg.addProperty("method", method);
    if (params != null && !params.isJsonNull()) msg.add("params", params);
    try {
      send(msg);
    } catch (IOException e) {
      pending.remove(id);
      future.completeExceptionally(new LockroomException("cannot send " + method + " to " + name + ": " + e.getMessage(), ErrorKind.UNAVAILABLE));
      return future;
    }
    if (cancel != null) {
      // After the request is on the wire, so a token cancelled already cancels it right after.
      Runnable remove = cancel.onCancel(() -> {
        if (pending.containsKey(id)) notify("$/cancelRequest", cancelParams(new JsonPrimitive(id)));
      });
      future.whenComplete((r, e) -> remove.run());
    }
    return future;
  }

  /** Sends a notification; a connection that has ended drops it. */
  public void notify(String method, JsonElement params) {
    JsonObject msg = new JsonObject();
    msg.addProperty("jsonrpc", "2.0");
    msg.addProperty("method", method);
    if (params != null && !params.isJsonNull()) msg.add("params", params);
    try {
      send(msg);
    } catch (IOException e) {
      // the peer is gone; the read side reports it
    }
  }

  /** Adds a listener for a notification; returns a function that removes it. */
  public Runnable onNotification(String method, Consumer<JsonElement> listener) {
    List<Consumer<JsonElement>> list = listeners.computeIfAbsent(method, m -> new CopyOnWriteArrayList<>());
    list.add(listener);
    return () -> list.remove(listener);
  }

  /** Answers the peer's requests of `method` (one handler per method; a later one replaces it). */
  public Runnable onRequest(String method, RequestHandler handler) {
    handlers.put(method, handler);
    return () -> handlers.remove(method, handler);
  }

  /** Fails every pending request with `why` and refuses new ones; idempotent. */
  public void end(LockroomException why) {
    synchronized (this) {
      if (ended != null) return;
      ended = why;
    }
    for (Map.Entry<Long, Pending> e : new ArrayList<>(pending.entrySet())) {
      Pending p = pending.remove(e.getKey());
      if (p == null) continue;
      events.execute(() -> p.future.completeExceptionally(
          new LockroomException(why.getMessage() + " before answering " + p.method, null, ErrorKind.UNAVAILABLE, null, null)));
    }
    for (CancelToken t : incoming.values()) t.cancel();
    events.execute(events::shutdown);
  }

  public boolean isEnded() {
    return ended != null;
  }

  private void send(JsonObject msg) throws IOException {
    Framing.write(out, Json.write(msg));
  }

  private static JsonObject cancelParams(JsonElement id) {
    JsonObject p = new JsonObject();
    p.add("id", id);
    return p;
  }

  private void readLoop() {
    Throwable cause = null;
    try {
      while (true) {
        String body = Framing.read(in, kMaxMessageBytes);
        if (body == null) break;
        JsonObject msg;
        try {
          msg = JsonParser.parseString(body).getAsJsonObject();
        } catch (JsonParseException | IllegalStateException e) {
          continue; // not a message: lockroom never sends one; skip rather than die
        }
        events.execute(() -> dispatch(msg));
      }
    } catch (IOException e) {
      cause = e;
    } catch (RuntimeException e) {
      cause = e; // the event executor shut down under a late message
    }
    for (Consumer<Throwable> l : readEndListeners) l.accept(cause);
  }

  private void dispatch(JsonObject msg) {
    JsonElement id = msg.get("id");
    boolean hasMethod = msg.has("method") && msg.get("method").isJsonPrimitive();
    if (!hasMethod) {
      if (id == null || !id.isJsonPrimitive() || !id.getAsJsonPrimitive().isNumber()) return; // not ours
      Pending p = pending.remove(id.getAsLong());
      if (p == null) return;
      if (msg.has("error") && msg.get("error").isJsonObject()) p.future.completeExceptionally(LockroomException.ofResponse(msg.getAsJsonObject("error")));
      else p.future.complete(msg.has("result") ? msg.get("result") : JsonNull.INSTANCE);
      return;
    }
    String method = msg.get("method").getAsString();
    JsonElement params = msg.has("params") ? msg.get("params") : JsonNull.INSTANCE;
    if (id == null || id.isJsonNull()) {
      if (method.equals("$/cancelRequest") && params.isJsonObject() && params.getAsJsonObject().has("id")) {
        CancelToken t = incoming.get(params.getAsJsonObject().get("id").toString());
        if (t != null) t.cancel();
      }
      for (Consumer<JsonElement> l : listeners.getOrDefault(method, List.of())) {
        try {
          l.accept(params);
        } catch (RuntimeException e) {
          System.err.println(name + ": a listener of " + method + " failed: " + e);
        }
      }
      return;
    }
    serveRequest(id, method, params);
  }

  private void serveRequest(JsonElement id, String method, JsonElement params) {
    RequestHandler h = handlers.get(method);
    if (h == null) {
      reply(id, null, error(LockroomException.kMethodNotFound, "this client does not answer " + method));
      return;
    }
    CancelToken token = new CancelToken();
    String key = id.toString();
    incoming.put(key, token);
    CompletableFuture<?> answer;
    try {
      answer = h.apply(params, token);
    } catch (RuntimeException e) {
      answer = CompletableFuture.failedFuture(e);
    }
    answer.whenComplete((result, failure) -> {
      incoming.remove(key);
      if (failure == null) {
        reply(id, Json.tree(result), null);
      } else {
        LockroomException e = LockroomException.from(failure);
        reply(id, null, error(e.code() != null ? e.code() : LockroomException.kInternalError, e.getMessage()));
      }
    });
  }

  private static JsonObject error(int code, String message) {
    JsonObject e = new JsonObject();
    e.addProperty("code", code);
    e.addProperty("message", message);
    return e;
  }

  private void reply(JsonElement id, JsonElement result, JsonObject error) {
    JsonObject msg = new JsonObject();
    msg.addProperty("jsonrpc", "2.0");
    msg.add("id", id);
    if (error != null) msg.add("error", error);
    else msg.add("result", result == null ? JsonNull.INSTANCE : result);
    try {
      send(msg);
    } catch (IOException e) {
      // the peer is gone
    }
  }
}
