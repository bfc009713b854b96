// ReviewAction: the targeted sandbox's changes (a fresh changes/list) in a chooser: "Apply all"
// first, then each changed file with its status and line counts; a file opens in the diff
// viewer (ReviewDiff) with its apply and reject actions, per file and per hunk.
package dev.lockroom.intellij.actions;

import com.intellij.notification.NotificationType;
import com.intellij.openapi.application.ApplicationManager;
import com.intellij.openapi.project.Project;
import com.intellij.openapi.ui.popup.JBPopupFactory;
import dev.lockroom.core.LockroomException;
import dev.lockroom.core.review.ReviewView;
import dev.lockroom.core.review.SandboxReview;
import dev.lockroom.intellij.LockroomProjectService;
import dev.lockroom.intellij.ReviewDiff;
import dev.lockroom.protocol.FileChange;
import java.util.ArrayList;
import java.util.List;

public final class ReviewAction extends LockroomAction {
  @Override
  void run(Project project, LockroomProjectService service, LockroomProjectService.Connection c) {
    String id = target(service, c);
    if (id == null) return;
    SandboxReview review = service.review(c, id);
    review.refresh().whenComplete((view, e) -> ApplicationManager.getApplication().invokeLater(() -> {
      if (e != null) {
        service.notify("Cannot list the changes of " + id + ": " + LockroomException.from(e).getMessage(), NotificationType.ERROR);
        return;
      }
      choose(project, review, view);
    }));
  }

  private static String label(FileChange f) {
    String name = f.oldPath() != null ? f.oldPath() + " → " + f.path() : f.path();
    return f.status().wire() + "  " + name + (f.binary() ? "  (binary)" : "  +" + f.added() + " −" + f.removed());
  }

  private static void choose(Project project, SandboxReview review, ReviewView view) {
    if (view.files().isEmpty()) {
      LockroomProjectService.getInstance(project).notify("No changes in " + review.sandboxId(), NotificationType.INFORMATION);
      return;
    }
    List<String> items = new ArrayList<>();
    String all = "Apply all " + view.files().size() + " changed file" + (view.files().size() == 1 ? "" : "s");
    items.add(all);
    for (FileChange f : view.files()) items.add(label(f));
    JBPopupFactory.getInstance().createPopupChooserBuilder(items)
        .setTitle("Changes in " + review.sandboxId())
        .setItemChosenCallback(item -> {
          if (item.equals(all)) {
            ReviewDiff.accept(project, review, null, view.viewId());
            return;
          }
          FileChange f = view.files().get(items.indexOf(item) - 1);
          ReviewDiff.show(project, review, f.path());
        })
        .createPopup()
        .showCenteredInCurrentWindow(project);
  }
}
