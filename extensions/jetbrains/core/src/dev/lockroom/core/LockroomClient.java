// LockroomClient: one connection to lockroom's editor face. It spawns `lockroom serve --stdio`,
// does LSP's lifecycle (initialize, initialized; shutdown and exit on close), and offers typed
// requests (the generated LockroomRequests: `client.sandboxCreate(params)`), notification
// subscriptions, `$/progress` per request, cancellation, answers to lockroom's own requests
// (`network/approve`), and the server's exit, after which every pending and later request
// fails as UNAVAILABLE naming how lockroom ended. No IntelliJ dependency: tested against the
// real binary. Threads: see JsonRpcConnection (listeners run on one event thread, in order).
package dev.lockroom.core;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonPrimitive;
import dev.lockroom.core.rpc.CancelToken;
import dev.lockroom.core.rpc.JsonRpcConnection;
import dev.lockroom.core.rpc.NotificationType;
import dev.lockroom.core.rpc.RequestType;
import dev.lockroom.protocol.Empty;
import dev.lockroom.protocol.InitializeParams;
import dev.lockroom.protocol.InitializeResult;
import dev.lockroom.protocol.LockroomRequests;
import dev.lockroom.protocol.Methods;
import dev.lockroom.protocol.ProgressParams;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;
import java.util.function.Consumer;

public final class LockroomClient implements LockroomRequests, AutoCloseable {
  private static final int kStderrTail = 20;
  private static final long kInitializeTimeoutMs = 60_000;

  private final Process process;
  private final JsonRpcConnection rpc;
  private final Deque<String> stderrTail;
  private final Map<JsonElement, Consumer<ProgressParams.Value>> progress = new ConcurrentHashMap<>();
  private final CompletableFuture<ClientExit> exited = new CompletableFuture<>();
  private final AtomicInteger nextToken = new AtomicInteger(1);
  private volatile InitializeResult initializeResult;
  private volatile boolean closing;

  private LockroomClient(Process process, JsonRpcConnection rpc, Deque<String> stderrTail) {
    this.process = process;
    this.rpc = rpc;
    this.stderrTail = stderrTail;
  }

  /** Spawns lockroom, initializes and sends `initialized`; fails as UNAVAILABLE when lockroom cannot start or exits first. */
  public static LockroomClient start(ClientOptions options) {
    List<String> argv = new ArrayList<>();
    argv.add(options.lockroom());
    argv.addAll(options.globalArgs());
    argv.add("serve");
    argv.add("--stdio");
    argv.addAll(options.serveArgs());
    ProcessBuilder pb = new ProcessBuilder(argv);
    pb.environment().putAll(options.env());
    if (options.cwd() != null) pb.directory(options.cwd().toFile());
    Process process;
    try {
      process = pb.start();
    } catch (IOException e) {
      throw new LockroomException("cannot start " + options.lockroom() + ": " + e.getMessage()
          + " (set the lockroom path in the settings, or put lockroom on PATH)", ErrorKind.UNAVAILABLE);
    }
    Deque<String> tail = new ArrayDeque<>();
    Thread stderr = new Thread(() -> drainStderr(process, tail, options.onLog()), "lockroom-stderr");
    stderr.setDaemon(true);
    stderr.start();
    JsonRpcConnection rpc = new JsonRpcConnection(process.getInputStream(), process.getOutputStream(), "lockroom");
    LockroomClient client = new LockroomClient(process, rpc, tail);
    rpc.onNotification(Methods.PROGRESS.method(), params -> client.progressed(params));
    rpc.listen(cause -> client.readEnded());
    process.onExit().thenRun(client::processEnded);

    InitializeParams.Capabilities.Experimental.Lockroom lockroom =
        InitializeParams.Capabilities.Experimental.Lockroom.builder().networkApproval(options.networkApproval()).build();
    InitializeParams params = InitializeParams.builder()
        .processId(ProcessHandle.current().pid())
        .clientInfo(InitializeParams.ClientInfo.builder().name(options.clientName()).version(options.clientVersion()).build())
        .capabilities(InitializeParams.Capabilities.builder()
            .window(InitializeParams.Capabilities.Window.builder().workDoneProgress(true).build())
            .experimental(InitializeParams.Capabilities.Experimental.builder().lockroom(lockroom).build())
            .build())
        .build();
    try {
      client.initializeResult = client.request(Methods.INITIALIZE, params, RequestOptions.kNone)
          .get(kInitializeTimeoutMs, TimeUnit.MILLISECONDS);
    } catch (Exception e) {
      process.destroyForcibly();
      LockroomException le = e instanceof java.util.concurrent.TimeoutException
          ? new LockroomException("lockroom did not answer initialize within " + kInitializeTimeoutMs / 1000 + " s", ErrorKind.UNAVAILABLE)
          : LockroomException.from(e);
      throw le;
    }
    client.rpc.notify(Methods.INITIALIZED.method(), new JsonObject());
    return client;
  }

  private static void drainStderr(Process process, Deque<String> tail, Consumer<String> onLog) {
    try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getErrorStream(), StandardCharsets.UTF_8))) {
      String line;
      while ((line = r.readLine()) != null) {
        synchronized (tail) {
          tail.addLast(line);
          if (tail.size() > kStderrTail) tail.removeFirst();
        }
        if (onLog != null) onLog.accept(line);
      }
    } catch (IOException e) {
      // the process is gone
    }
  }

  public InitializeResult initializeResult() {
    return initializeResult;
  }

  /** The request methods this server offers (its initialize answer). */
  public List<String> methods() {
    return initializeResult.capabilities().experimental().lockroom().methods();
  }

  /** The server's process id (the bridge's, for a shared server). */
  public long pid() {
    return process.pid();
  }

  public boolean alive() {
    return !exited.isDone();
  }

  /** Completes when the lockroom process has ended, for whatever reason. */
  public CompletableFuture<ClientExit> exited() {
    return exited;
  }

  /** True on the thread that runs listeners (never block there on a reply). */
  public boolean onEventThread() {
    return rpc.onEventThread();
  }

  @Override
  public <P, R> CompletableFuture<R> request(RequestType<P, R> type, P params) {
    return request(type, params, RequestOptions.kNone);
  }

  /** A typed request with progress and cancellation; completes on the event thread. */
  public <P, R> CompletableFuture<R> request(RequestType<P, R> type, P params, RequestOptions options) {
    if (exited.isDone()) {
      return CompletableFuture.failedFuture(new LockroomException(
          "lockroom is gone (" + exited.join().describe() + "); " + type.method() + " was not sent", ErrorKind.UNAVAILABLE));
    }
    JsonElement sent = params == null ? new JsonObject() : Json.tree(params);
    JsonElement token = null;
    if (options.onProgress() != null) {
      if (!sent.isJsonObject()) throw new IllegalArgumentException(type.method() + ": progress needs object params");
      token = new JsonPrimitive("jetbrains-" + nextToken.getAndIncrement());
      progress.put(token, options.onProgress());
      sent = sent.deepCopy();
      sent.getAsJsonObject().add("workDoneToken", token);
    }
    JsonElement registered = token;
    return rpc.request(type.method(), sent, options.cancel()).handle((result, failure) -> {
      if (registered != null) progress.remove(registered);
      if (failure != null) throw LockroomException.from(failure);
      try {
        return Json.read(result, type.resultType());
      } catch (RuntimeException e) {
        throw new LockroomException("lockroom's answer to " + type.method() + " does not read as " + type.resultType().getSimpleName()
            + ": " + e.getMessage(), ErrorKind.PROTOCOL);
      }
    });
  }

  /** Blocking form for callers off the event thread: the result, or the LockroomException. */
  public <P, R> R call(RequestType<P, R> type, P params) {
    if (rpc.onEventThread()) throw new IllegalStateException("call() on lockroom's event thread would wait for itself; use request()");
    try {
      return request(type, params).join();
    } catch (RuntimeException e) {
      throw LockroomException.from(e);
    }
  }

  /** Sends a notification of the client's (`$/cancelRequest` is sent by CancelToken, `exit` by close()). */
  public <P> void notify(NotificationType<P> type, P params) {
    rpc.notify(type.method(), params == null ? new JsonObject() : Json.tree(params));
  }

  /** Subscribes to a server notification; returns a function that unsubscribes. Runs on the event thread. */
  public <P> Runnable on(NotificationType<P> type, Consumer<P> listener) {
    return rpc.onNotification(type.method(), params -> listener.accept(Json.read(params, type.paramsType())));
  }

  /**
   * Answers lockroom's requests of `type` (`network/approve`). The handler gets the params and a
   * CancelToken that fires when lockroom withdraws the request (`$/cancelRequest`) or goes away.
   */
  public <P, R> Runnable handle(RequestType<P, R> type, BiFunction<P, CancelToken, CompletableFuture<R>> handler) {
    return rpc.onRequest(type.method(), (params, token) -> handler.apply(Json.read(params, type.paramsType()), token));
  }

  /** `shutdown` and `exit`; kills the process if it has not ended within `timeoutMs`. */
  public ClientExit close(long timeoutMs) {
    if (exited.isDone()) return exited.join();
    if (rpc.onEventThread()) throw new IllegalStateException("close() on lockroom's event thread would wait for itself; close from another thread");
    closing = true;
    long end = System.currentTimeMillis() + timeoutMs;
    try {
      request(Methods.SHUTDOWN, new Empty()).get(timeoutMs, TimeUnit.MILLISECONDS);
      rpc.notify(Methods.EXIT.method(), new JsonObject());
    } catch (Exception e) {
      // the server is going away anyway
    }
    try {
      return exited.get(Math.max(1, end - System.currentTimeMillis()), TimeUnit.MILLISECONDS);
    } catch (Exception e) {
      process.destroyForcibly();
      return exited.join();
    }
  }

  @Override
  public void close() {
    close(10_000);
  }

  private void progressed(JsonElement params) {
    ProgressParams p = Json.read(params, ProgressParams.class);
    Consumer<ProgressParams.Value> l = p.token() == null ? null : progress.get(p.token());
    if (l != null) l.accept(p.value());
  }

  private void readEnded() {
    // stdout closed: the process is ending; its exit (processEnded) fails what is pending. A
    // process that closed stdout but lingers is killed after a moment.
    process.onExit().completeOnTimeout(null, 3, TimeUnit.SECONDS).thenRun(() -> {
      if (process.isAlive()) process.destroyForcibly();
    });
  }

  private void processEnded() {
    List<String> tail;
    try {
      // let the stderr reader take the last lines first
      Thread.sleep(50);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    synchronized (stderrTail) {
      tail = List.copyOf(stderrTail);
    }
    ClientExit exit = ClientExit.of(process.exitValue(), tail, closing);
    rpc.end(new LockroomException("lockroom exited (" + exit.describe() + ")", ErrorKind.UNAVAILABLE));
    exited.complete(exit);
  }
}
