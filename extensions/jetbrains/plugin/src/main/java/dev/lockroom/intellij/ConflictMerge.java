// ConflictMerge: a file whose apply conflicted, in the platform's three-way merge dialog: your
// file as it is now, the review's base, and the sandbox's version (the core's ConflictSides);
// the result is written to your file. lockroom wrote nothing to it; the sandbox's change stays
// in the review until you apply or reject it.
package dev.lockroom.intellij;

import com.intellij.diff.DiffManager;
import com.intellij.diff.DiffRequestFactory;
import com.intellij.diff.InvalidDiffRequestException;
import com.intellij.diff.merge.MergeRequest;
import com.intellij.notification.NotificationType;
import com.intellij.openapi.application.ApplicationManager;
import com.intellij.openapi.project.Project;
import com.intellij.openapi.vfs.LocalFileSystem;
import com.intellij.openapi.vfs.VirtualFile;
import dev.lockroom.core.LockroomException;
import dev.lockroom.core.review.ConflictSides;
import dev.lockroom.core.review.SandboxReview;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

public final class ConflictMerge {
  private ConflictMerge() {}

  public static void show(Project project, SandboxReview review, Path root, String path, String viewId) {
    LockroomProjectService service = LockroomProjectService.getInstance(project);
    review.conflictSides(root, path, viewId).whenComplete((sides, e) -> ApplicationManager.getApplication().invokeLater(() -> {
      if (e != null) {
        service.notify("Cannot open the merge for " + path + ": " + LockroomException.from(e).getMessage(), NotificationType.ERROR);
        return;
      }
      open(project, review, sides);
    }));
  }

  private static byte[] orEmpty(byte[] b) {
    return b == null ? new byte[0] : b;
  }

  private static void open(Project project, SandboxReview review, ConflictSides sides) {
    VirtualFile output = LocalFileSystem.getInstance().refreshAndFindFileByNioFile(sides.hostFile());
    if (output == null) {
      LockroomProjectService.getInstance(project).notify(sides.hostFile() + " is gone; nothing to merge into", NotificationType.WARNING);
      return;
    }
    try {
      MergeRequest request = DiffRequestFactory.getInstance().createMergeRequest(project, output,
          Arrays.asList(orEmpty(sides.yours()), orEmpty(sides.base()), orEmpty(sides.sandbox())),
          "Merge " + sides.path() + " from " + review.sandboxId(),
          List.of("Yours (your file now)", "Base", "Sandbox " + review.sandboxId()),
          result -> review.poke());
      DiffManager.getInstance().showMerge(project, request);
    } catch (InvalidDiffRequestException ex) {
      LockroomProjectService.getInstance(project).notify("Cannot merge " + sides.path() + ": " + ex.getMessage(), NotificationType.ERROR);
    }
  }
}
