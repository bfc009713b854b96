// ReviewView: one listing of a sandbox's changes as the review shows it: the view id every
// decision names (protocol/workspace.md, "Views"), the changed files, the guest's refused
// entries, and the changes/changed version it answered.
package dev.lockroom.core.review;

import dev.lockroom.protocol.FileChange;
import dev.lockroom.protocol.Refusal;
import java.util.List;

public record ReviewView(String viewId, List<FileChange> files, List<Refusal> refused, long version) {
  public FileChange file(String path) {
    for (FileChange f : files) if (f.path().equals(path)) return f;
    return null;
  }
}
