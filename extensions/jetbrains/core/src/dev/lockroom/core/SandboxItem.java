// SandboxItem: one row of the sandboxes tool window: the sandbox's list entry, its processes
// (ended ones stay, the newest 50), its newest network events, and why it ended. Mutable, owned
// by SandboxesModel; a UI reads it after the model's change callback.
package dev.lockroom.core;

import dev.lockroom.protocol.NetworkEventParams;
import dev.lockroom.protocol.ProcessInfo;
import dev.lockroom.protocol.SandboxEntry;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

public final class SandboxItem {
  SandboxEntry entry;
  long listedAt;
  final Map<String, ProcessInfo> processes = new LinkedHashMap<>();
  final List<NetworkEventParams> network = new ArrayList<>();
  String ended;

  SandboxItem(SandboxEntry entry) {
    this.entry = entry;
    this.listedAt = System.currentTimeMillis();
  }

  public synchronized SandboxEntry entry() {
    return entry;
  }

  /** When entry() was read (its age now is entry().ageMs() + now - listedAt()). */
  public synchronized long listedAt() {
    return listedAt;
  }

  /** Processes in start order, ended ones included. */
  public synchronized List<ProcessInfo> processes() {
    return List.copyOf(processes.values());
  }

  public synchronized ProcessInfo process(String processId) {
    return processes.get(processId);
  }

  /** The newest network events (connection open, progress and close; decisions), oldest first. */
  public synchronized List<NetworkEventParams> network() {
    return List.copyOf(network);
  }

  /** Why the sandbox ended (lockroom's message, else its reason), or null while it lives. */
  public synchronized String ended() {
    return ended;
  }

  /** A label for a tree: the editor's label, else the id, with its state when it is not ready. */
  public synchronized String title() {
    String name = entry.label() == null || entry.label().isEmpty() ? entry.sandboxId() : entry.label();
    String state = entry.state() == null ? "" : entry.state().wire();
    return state.equals("ready") ? name : name + " (" + state + ")";
  }
}
