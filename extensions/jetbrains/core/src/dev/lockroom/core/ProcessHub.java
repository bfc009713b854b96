// ProcessHub: guest processes as objects, for one connection. It routes `process/output` and
// `process/exited` to the GuestProcess of each id; output that arrives before its handle exists
// (a kit's service, a process re-attached after a reload) is held, bounded, until adopt() makes
// one. Everything runs on the client's event thread, so the handle made from process/start's
// reply sees the output that follows it in wire order.
package dev.lockroom.core;

import dev.lockroom.protocol.Methods;
import dev.lockroom.protocol.ProcessExitedParams;
import dev.lockroom.protocol.ProcessInfo;
import dev.lockroom.protocol.ProcessOutputParams;
import dev.lockroom.protocol.ProcessStartParams;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

public final class ProcessHub implements AutoCloseable {
  private static final int kHeldBytesPerProcess = 1 << 20;
  private static final int kHeldProcesses = 64;
  private static final long kHeldMs = 30_000;

  private static final class Held {
    final List<ProcessOutputParams> output = new ArrayList<>();
    long bytes;
    ProcessExitedParams exit;
    final long since = System.currentTimeMillis();
  }

  private final LockroomClient client;
  private final Map<String, GuestProcess> handles = new ConcurrentHashMap<>();
  private final Map<String, Held> held = new ConcurrentHashMap<>();
  private final List<Consumer<ProcessInfo>> startListeners = new CopyOnWriteArrayList<>();
  private final List<Runnable> unsubscribe = new ArrayList<>();

  public ProcessHub(LockroomClient client) {
    this.client = client;
    unsubscribe.add(client.on(Methods.PROCESS_OUTPUT, this::output));
    unsubscribe.add(client.on(Methods.PROCESS_EXITED, this::exited));
  }

  public LockroomClient client() {
    return client;
  }

  /** Starts `params.argv()` in the guest (with pipes, or a pty when params.pty() is set). */
  public CompletableFuture<GuestProcess> start(ProcessStartParams params) {
    long startedAt = System.currentTimeMillis();
    return client.processStart(params).thenApply(r -> {
      // lockroom announces only processes the editor did not start (process/started): tell the
      // models about this one as process/list would show it.
      ProcessInfo info = ProcessInfo.builder().processId(r.processId()).sandboxId(params.sandboxId()).argv(params.argv())
          .cwd(params.cwd() != null ? params.cwd() : "/workspace").pty(params.pty() != null).origin(ProcessInfo.Origin.CLIENT)
          .startedAt(startedAt).running(true).build();
      for (Consumer<ProcessInfo> l : startListeners) l.accept(info);
      return adopt(params.sandboxId(), r.processId());
    });
  }

  /** Called for each process this hub starts; returns a function that unsubscribes. */
  public Runnable onDidStart(Consumer<ProcessInfo> listener) {
    startListeners.add(listener);
    return () -> startListeners.remove(listener);
  }

  /** The handle of a process this connection did not start itself (a kit's service, one re-attached). */
  public synchronized GuestProcess adopt(String sandboxId, String processId) {
    GuestProcess existing = handles.get(processId);
    if (existing != null) return existing;
    GuestProcess handle = new GuestProcess(client, sandboxId, processId, () -> handles.remove(processId));
    handles.put(processId, handle);
    Held h = held.remove(processId);
    if (h != null) {
      for (ProcessOutputParams o : h.output) handle.deliver(o);
      if (h.exit != null) handle.finish(h.exit);
    }
    return handle;
  }

  @Override
  public void close() {
    for (Runnable u : unsubscribe) u.run();
  }

  private synchronized void output(ProcessOutputParams p) {
    GuestProcess handle = handles.get(p.processId());
    if (handle != null) {
      handle.deliver(p);
      return;
    }
    Held h = hold(p.processId());
    if (h.bytes + p.data().length() <= kHeldBytesPerProcess) {
      h.output.add(p);
      h.bytes += p.data().length();
    }
  }

  private synchronized void exited(ProcessExitedParams p) {
    GuestProcess handle = handles.get(p.processId());
    if (handle != null) handle.finish(p);
    else hold(p.processId()).exit = p;
  }

  private Held hold(String processId) {
    Held h = held.get(processId);
    if (h != null) return h;
    long now = System.currentTimeMillis();
    for (Iterator<Map.Entry<String, Held>> it = held.entrySet().iterator(); it.hasNext();) {
      Held old = it.next().getValue();
      if (now - old.since > kHeldMs || held.size() >= kHeldProcesses) it.remove();
    }
    h = new Held();
    held.put(processId, h);
    return h;
  }
}
