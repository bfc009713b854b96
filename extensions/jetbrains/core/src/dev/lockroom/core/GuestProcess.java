// GuestProcess: one process in a guest: its output as bytes (stdout, stderr, or a pty's single
// stream), its exit, and the requests that act on it (write, closeStdin, resize, signal). A
// terminal widget renders it: output → screen, keys → write(), size → resize(). Output that
// arrives while nobody listens is kept (the newest 1 MiB) for the first listener.
package dev.lockroom.core;

import dev.lockroom.protocol.ProcessExit;
import dev.lockroom.protocol.ProcessExitedParams;
import dev.lockroom.protocol.ProcessIdParams;
import dev.lockroom.protocol.ProcessOutputParams;
import dev.lockroom.protocol.ProcessResizeParams;
import dev.lockroom.protocol.ProcessSignalParams;
import dev.lockroom.protocol.ProcessWriteParams;
import com.google.gson.JsonPrimitive;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

public final class GuestProcess {
  /** A chunk of output: its bytes and its stream (`stdout`, `stderr` or `pty`). */
  public record Output(byte[] data, ProcessOutputParams.Stream stream) {}

  /** Everything a process wrote until its exit (a pty's output is in stdout). */
  public record Collected(String stdout, String stderr, ProcessExit exit) {}

  private static final int kUnheardBytes = 1 << 20;

  private final LockroomClient client;
  private final String sandboxId;
  private final String processId;
  private final Runnable forget;
  private final List<Consumer<Output>> outputListeners = new CopyOnWriteArrayList<>();
  private final Deque<Output> unheard = new ArrayDeque<>();
  private long unheardBytes;
  private final CompletableFuture<ProcessExit> exit = new CompletableFuture<>();

  GuestProcess(LockroomClient client, String sandboxId, String processId, Runnable forget) {
    this.client = client;
    this.sandboxId = sandboxId;
    this.processId = processId;
    this.forget = forget;
  }

  public String sandboxId() {
    return sandboxId;
  }

  public String processId() {
    return processId;
  }

  /** Completes with the exit (exitCode, or signal, and reason when lockroom ended it). */
  public CompletableFuture<ProcessExit> exited() {
    return exit;
  }

  /** Output as it arrives; the first listener also gets what came while nobody listened. Returns an unsubscribe function. */
  public synchronized Runnable onOutput(Consumer<Output> listener) {
    outputListeners.add(listener);
    List<Output> replay = new ArrayList<>(unheard);
    unheard.clear();
    unheardBytes = 0;
    for (Output o : replay) listener.accept(o);
    return () -> outputListeners.remove(listener);
  }

  /** Collects stdout and stderr until the exit. */
  public CompletableFuture<Collected> collect() {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    Runnable stop = onOutput(o -> (o.stream() == ProcessOutputParams.Stream.STDERR ? err : out).writeBytes(o.data()));
    return exit.thenApply(e -> {
      stop.run();
      return new Collected(out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8), e);
    });
  }

  public CompletableFuture<Void> write(byte[] data) {
    return client.processWrite(ProcessWriteParams.builder().processId(processId)
        .data(Base64.getEncoder().encodeToString(data)).encoding(ProcessWriteParams.Encoding.BASE64).build());
  }

  public CompletableFuture<Void> write(String text) {
    return write(text.getBytes(StandardCharsets.UTF_8));
  }

  public CompletableFuture<Void> closeStdin() {
    return client.processCloseStdin(ProcessIdParams.builder().processId(processId).build());
  }

  public CompletableFuture<Void> resize(int cols, int rows) {
    return client.processResize(ProcessResizeParams.builder().processId(processId).cols((long) cols).rows((long) rows).build());
  }

  /** `SIGINT`, `INT`, ... */
  public CompletableFuture<Void> signal(String signal) {
    return client.processSignal(ProcessSignalParams.builder().processId(processId).signal(new JsonPrimitive(signal)).build());
  }

  synchronized void deliver(ProcessOutputParams p) {
    byte[] data = "base64".equals(p.encoding()) ? Base64.getDecoder().decode(p.data()) : p.data().getBytes(StandardCharsets.UTF_8);
    Output o = new Output(data, p.stream());
    if (outputListeners.isEmpty()) {
      unheard.addLast(o);
      unheardBytes += data.length;
      while (unheardBytes > kUnheardBytes && unheard.size() > 1) unheardBytes -= unheard.removeFirst().data().length;
      return;
    }
    for (Consumer<Output> l : outputListeners) l.accept(o);
  }

  synchronized void finish(ProcessExitedParams p) {
    if (exit.isDone()) return;
    forget.run();
    exit.complete(ProcessExit.builder().exitCode(p.exitCode()).signal(p.signal()).signalNumber(p.signalNumber())
        .reason(p.reason() == null ? null : ProcessExit.Reason.of(p.reason().wire())).build());
    outputListeners.clear();
  }
}
