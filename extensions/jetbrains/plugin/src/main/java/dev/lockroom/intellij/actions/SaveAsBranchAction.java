// SaveAsBranchAction: commits the targeted sandbox's reviewed changes to `lockroom/NAME` in the
// project's repository (changes/apply, branch mode); the checkout, index and HEAD are not
// touched. An existing branch is replaced only when the user says so.
package dev.lockroom.intellij.actions;

import com.intellij.notification.NotificationType;
import com.intellij.openapi.application.ApplicationManager;
import com.intellij.openapi.project.Project;
import com.intellij.openapi.ui.Messages;
import dev.lockroom.core.ErrorKind;
import dev.lockroom.core.LockroomException;
import dev.lockroom.core.review.BranchOutcome;
import dev.lockroom.core.review.SandboxReview;
import dev.lockroom.intellij.LockroomProjectService;

public final class SaveAsBranchAction extends LockroomAction {
  @Override
  void run(Project project, LockroomProjectService service, LockroomProjectService.Connection c) {
    String id = target(service, c);
    if (id == null) return;
    SandboxReview review = service.review(c, id);
    review.refresh().whenComplete((view, e) -> ApplicationManager.getApplication().invokeLater(() -> {
      String name = Messages.showInputDialog(project, "Branch name (made as lockroom/<name>; your checkout is not touched):",
          "Save as Branch", null, id, null);
      if (name == null || name.isBlank()) return;
      save(project, service, review, name, false);
    }));
  }

  private static void save(Project project, LockroomProjectService service, SandboxReview review, String name, boolean force) {
    review.saveAsBranch(name, force).whenComplete((b, e) -> ApplicationManager.getApplication().invokeLater(() -> {
      if (e != null) {
        LockroomException le = LockroomException.from(e);
        if (le.kind() == ErrorKind.WRONG_STATE && !force
            && Messages.showYesNoDialog(project, le.getMessage() + "\n\nReplace lockroom/" + name + "?", "Save as Branch", null) == Messages.YES) {
          save(project, service, review, name, true);
        } else {
          service.notify("No branch written: " + le.getMessage(), NotificationType.ERROR);
        }
        return;
      }
      report(service, b);
    }));
  }

  private static void report(LockroomProjectService service, BranchOutcome b) {
    if (!b.created()) {
      service.notify("No branch written: the changes conflict with your HEAD in " + String.join(", ", b.conflicts()), NotificationType.WARNING);
      return;
    }
    service.notify("Saved as " + b.shortName() + " (" + b.commit().substring(0, 8) + "). Merge it with git when you are ready.",
        NotificationType.INFORMATION);
  }
}
