// SandboxesModel: what the lockroom tool window shows — this connection's sandboxes, their state,
// processes and network activity — kept current from lockroom's notifications
// (sandbox/stateChanged, process/started, process/exited, network/event), never by polling. It
// also carries a reload: reattach() takes this workspace's detached sandboxes back
// (sandbox/attach), processes included. Listeners are called at most every 50 ms.
package dev.lockroom.core;

import dev.lockroom.protocol.Empty;
import dev.lockroom.protocol.Methods;
import dev.lockroom.protocol.NetworkEventParams;
import dev.lockroom.protocol.ProcessExit;
import dev.lockroom.protocol.ProcessInfo;
import dev.lockroom.protocol.SandboxAttachResult;
import dev.lockroom.protocol.SandboxCreateParams;
import dev.lockroom.protocol.SandboxCreateResult;
import dev.lockroom.protocol.SandboxEntry;
import dev.lockroom.protocol.SandboxIdParams;
import dev.lockroom.protocol.SandboxState;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

public final class SandboxesModel implements AutoCloseable {
  static final int kNetworkKept = 500;
  static final int kEndedKept = 50;
  static final long kNotifyDelayMs = 50;
  /** The label `lockroom acp` gives its sessions' sandboxes (their chat resumes them, not this model). */
  public static final String kAcpSessionLabelPrefix = "acp session ";

  private final LockroomClient client;
  private final ProcessHub hub;
  private final Map<String, SandboxItem> items = new ConcurrentHashMap<>();
  private final List<Runnable> listeners = new CopyOnWriteArrayList<>();
  private final List<Runnable> unsubscribe = new ArrayList<>();
  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "lockroom-model");
    t.setDaemon(true);
    return t;
  });
  private final AtomicBoolean pending = new AtomicBoolean();

  public SandboxesModel(LockroomClient client, ProcessHub hub) {
    this.client = client;
    this.hub = hub;
    unsubscribe.add(client.on(Methods.SANDBOX_STATE_CHANGED, p -> {
      SandboxItem item = items.get(p.sandboxId());
      if (item == null) return;
      synchronized (item) {
        item.entry = Json.copy(item.entry, e -> {
          e.add("state", Json.tree(p.state()));
          if (p.reason() != null) e.add("reason", Json.tree(p.reason()));
        });
        if (p.state() == SandboxState.GONE || p.state() == SandboxState.FAILED) {
          item.ended = p.message() != null ? p.message() : p.reason() != null ? p.reason().wire() : p.state().wire();
          item.processes.replaceAll((id, proc) -> proc.running() ? withExit(proc, proc.exit()) : proc);
        }
      }
      changed();
    }));
    unsubscribe.add(client.on(Methods.PROCESS_STARTED, this::processStarted));
    unsubscribe.add(hub.onDidStart(this::processStarted));
    unsubscribe.add(client.on(Methods.PROCESS_EXITED, p -> {
      SandboxItem item = items.get(p.sandboxId());
      if (item == null) return;
      synchronized (item) {
        ProcessInfo proc = item.processes.get(p.processId());
        if (proc == null) return;
        ProcessExit exit = ProcessExit.builder().exitCode(p.exitCode()).signal(p.signal()).signalNumber(p.signalNumber())
            .reason(p.reason() == null ? null : ProcessExit.Reason.of(p.reason().wire())).build();
        item.processes.put(p.processId(), withExit(proc, exit));
        trimEnded(item);
      }
      changed();
    }));
    unsubscribe.add(client.on(Methods.NETWORK_EVENT, e -> {
      SandboxItem item = items.get(e.sandboxId());
      if (item == null) return;
      synchronized (item) {
        item.network.add(e);
        if (item.network.size() > kNetworkKept) item.network.subList(0, item.network.size() - kNetworkKept).clear();
      }
      changed();
    }));
  }

  private static ProcessInfo withExit(ProcessInfo p, ProcessExit exit) {
    return Json.copy(p, j -> {
      j.addProperty("running", false);
      if (exit != null) j.add("exit", Json.tree(exit));
    });
  }

  public List<SandboxItem> list() {
    return List.copyOf(items.values());
  }

  public SandboxItem get(String sandboxId) {
    return items.get(sandboxId);
  }

  /** Called (on a model thread, at most every 50 ms) after anything changed; returns a function that unsubscribes. */
  public Runnable onDidChange(Runnable listener) {
    listeners.add(listener);
    return () -> listeners.remove(listener);
  }

  /** sandbox/create, then the sandbox (and any kit services) in the model. */
  public CompletableFuture<SandboxCreateResult> create(SandboxCreateParams params, RequestOptions options) {
    return client.request(Methods.SANDBOX_CREATE, params, options)
        .thenCompose(created -> refreshEntry(created.sandboxId()).thenCompose(x -> loadProcesses(created.sandboxId())).thenApply(x -> created));
  }

  /**
   * Attaches the detached sandboxes of `workspace` (null: every one) that a closed or reloaded
   * window left, not a chat's (`acp session …`): each becomes this connection's, with its
   * processes; lockroom replays what they wrote meanwhile right after each answer.
   */
  public CompletableFuture<List<SandboxAttachResult>> reattach(String workspace) {
    return client.sandboxList(new Empty()).thenCompose(list -> {
      CompletableFuture<List<SandboxAttachResult>> chain = CompletableFuture.completedFuture(new ArrayList<>());
      for (SandboxEntry s : list.sandboxes()) {
        if (!Boolean.FALSE.equals(s.attached())) continue;
        if (workspace != null && !workspace.equals(s.workspace())) continue;
        if (s.label() != null && s.label().startsWith(kAcpSessionLabelPrefix)) continue;
        chain = chain.thenCompose(out -> client.sandboxAttach(SandboxIdParams.builder().sandboxId(s.sandboxId()).build()).thenCompose(a -> {
          add(a.sandbox());
          for (SandboxAttachResult.Process p : a.processes()) if (p.running()) hub.adopt(s.sandboxId(), p.processId());
          out.add(a);
          return loadProcesses(s.sandboxId()).thenApply(x -> out);
        }));
      }
      return chain;
    });
  }

  /** The sandboxes this connection already owns (a model made after they were). */
  public CompletableFuture<Void> load() {
    return client.sandboxList(new Empty()).thenCompose(list -> {
      CompletableFuture<Void> chain = CompletableFuture.completedFuture(null);
      for (SandboxEntry s : list.sandboxes()) {
        if (Boolean.FALSE.equals(s.attached())) continue;
        add(s);
        chain = chain.thenCompose(x -> loadProcesses(s.sandboxId()));
      }
      return chain;
    });
  }

  public CompletableFuture<Void> destroy(String sandboxId) {
    return client.sandboxDestroy(SandboxIdParams.builder().sandboxId(sandboxId).build());
  }

  /** Forgets an ended sandbox (the tool window's "clear"). */
  public void forget(String sandboxId) {
    if (items.remove(sandboxId) != null) changed();
  }

  @Override
  public void close() {
    for (Runnable u : unsubscribe) u.run();
    listeners.clear();
    timer.shutdownNow();
  }

  private CompletableFuture<Void> refreshEntry(String sandboxId) {
    return client.sandboxList(new Empty()).thenAccept(list -> {
      for (SandboxEntry s : list.sandboxes()) if (s.sandboxId().equals(sandboxId)) add(s);
    });
  }

  private void processStarted(ProcessInfo p) {
    SandboxItem item = items.get(p.sandboxId());
    if (item == null) return;
    synchronized (item) {
      if (item.processes.containsKey(p.processId())) return;
      item.processes.put(p.processId(), p);
    }
    changed();
  }

  private void add(SandboxEntry entry) {
    SandboxItem known = items.get(entry.sandboxId());
    if (known != null) {
      synchronized (known) {
        known.entry = entry;
        known.listedAt = System.currentTimeMillis();
      }
    } else {
      items.put(entry.sandboxId(), new SandboxItem(entry));
    }
    changed();
  }

  private CompletableFuture<Void> loadProcesses(String sandboxId) {
    if (!items.containsKey(sandboxId)) return CompletableFuture.completedFuture(null);
    return client.processList(SandboxIdParams.builder().sandboxId(sandboxId).build()).thenAccept(r -> {
      SandboxItem item = items.get(sandboxId);
      if (item == null) return;
      synchronized (item) {
        for (ProcessInfo p : r.processes()) item.processes.put(p.processId(), p);
        trimEnded(item);
      }
      changed();
    });
  }

  private static void trimEnded(SandboxItem item) {
    List<String> ended = new ArrayList<>();
    for (ProcessInfo p : item.processes.values()) if (!p.running()) ended.add(p.processId());
    for (int i = 0; i < ended.size() - kEndedKept; i++) item.processes.remove(ended.get(i));
  }

  private void changed() {
    if (!pending.compareAndSet(false, true)) return;
    try {
      timer.schedule(() -> {
        pending.set(false);
        for (Runnable l : listeners) l.run();
      }, kNotifyDelayMs, TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      // closed
    }
  }
}
