// CancelToken: how a caller cancels a request it sent. cancel() makes the connection send
// `$/cancelRequest` for it; the request's future still completes with what lockroom answers
// (-32800, or the real result for work that had begun writing: protocol/workspace.md,
// "Cancellation"), so a UI never assumes what a cancel did.
package dev.lockroom.core.rpc;

import java.util.ArrayList;
import java.util.List;

public final class CancelToken {
  private final List<Runnable> listeners = new ArrayList<>();
  private boolean cancelled;

  public void cancel() {
    List<Runnable> run;
    synchronized (this) {
      if (cancelled) return;
      cancelled = true;
      run = new ArrayList<>(listeners);
      listeners.clear();
    }
    for (Runnable r : run) r.run();
  }

  public synchronized boolean isCancelled() {
    return cancelled;
  }

  /** Runs `r` on cancel (at once when already cancelled); returns a function that removes it. */
  public Runnable onCancel(Runnable r) {
    synchronized (this) {
      if (!cancelled) {
        listeners.add(r);
        return () -> {
          synchronized (this) {
            listeners.remove(r);
          }
        };
      }
    }
    r.run();
    return () -> {};
  }
}
