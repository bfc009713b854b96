// ReviewSelection: what the user ticked in a review — whole files and single hunks — turned into
// the protocol's `select` ([{path}, {path, hunks}]). A UI only renders the ticks; a file ticked
// whole wins over its hunks, a file with no tick is left out. Keyed by hunk id, which survives
// a partial apply (protocol/workspace.md, "Hunk ids"), so ticks may outlive one listing.
package dev.lockroom.core.review;

import dev.lockroom.protocol.FileSelection;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

public final class ReviewSelection {
  private final Set<String> wholeFiles = new LinkedHashSet<>();
  private final Map<String, Set<String>> hunks = new LinkedHashMap<>();

  public synchronized ReviewSelection file(String path, boolean selected) {
    if (selected) wholeFiles.add(path);
    else {
      wholeFiles.remove(path);
      hunks.remove(path);
    }
    return this;
  }

  public synchronized ReviewSelection hunk(String path, String hunkId, boolean selected) {
    Set<String> ids = hunks.computeIfAbsent(path, p -> new LinkedHashSet<>());
    if (selected) ids.add(hunkId);
    else ids.remove(hunkId);
    if (ids.isEmpty()) hunks.remove(path);
    return this;
  }

  public synchronized boolean isSelected(String path) {
    return wholeFiles.contains(path);
  }

  public synchronized boolean isSelected(String path, String hunkId) {
    return wholeFiles.contains(path) || hunks.getOrDefault(path, Set.of()).contains(hunkId);
  }

  public synchronized boolean isEmpty() {
    return wholeFiles.isEmpty() && hunks.isEmpty();
  }

  /** Keeps only ticks the view still has (files it lists; hunks of `knownHunks` per path, when known). */
  public synchronized void retain(ReviewView view, Map<String, Set<String>> knownHunks) {
    Set<String> paths = new LinkedHashSet<>();
    view.files().forEach(f -> paths.add(f.path()));
    wholeFiles.retainAll(paths);
    hunks.keySet().retainAll(paths);
    for (Map.Entry<String, Set<String>> e : knownHunks.entrySet()) {
      Set<String> ids = hunks.get(e.getKey());
      if (ids != null) {
        ids.retainAll(e.getValue());
        if (ids.isEmpty()) hunks.remove(e.getKey());
      }
    }
  }

  /** The protocol's selection: whole files first, then files with some hunks. */
  public synchronized List<FileSelection> toSelect() {
    List<FileSelection> out = new ArrayList<>();
    for (String p : wholeFiles) out.add(FileSelection.builder().path(p).build());
    for (Map.Entry<String, Set<String>> e : hunks.entrySet()) {
      if (wholeFiles.contains(e.getKey())) continue;
      out.add(FileSelection.builder().path(e.getKey()).hunks(List.copyOf(e.getValue())).build());
    }
    return out;
  }

  public synchronized void clear() {
    wholeFiles.clear();
    hunks.clear();
  }
}
