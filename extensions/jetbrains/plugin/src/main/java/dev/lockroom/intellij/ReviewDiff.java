// ReviewDiff: one changed file of a sandbox in the platform's diff viewer — the review's base on
// the left, the sandbox's version on the right, exactly as the view `viewId` showed them — with
// the review's decisions as the viewer's actions: apply or reject the file, apply or reject the
// hunk at the caret. Each names the view on screen, so lockroom applies what the user saw or
// refuses with "changed since you reviewed it". Outcomes are one notification; a conflict offers
// the merge dialog (ConflictMerge).
package dev.lockroom.intellij;

import com.intellij.diff.DiffContentFactory;
import com.intellij.diff.DiffManager;
import com.intellij.diff.requests.SimpleDiffRequest;
import com.intellij.diff.util.DiffUserDataKeys;
import com.intellij.notification.NotificationAction;
import com.intellij.notification.NotificationGroupManager;
import com.intellij.notification.NotificationType;
import com.intellij.openapi.actionSystem.AnAction;
import com.intellij.openapi.actionSystem.AnActionEvent;
import com.intellij.openapi.actionSystem.CommonDataKeys;
import com.intellij.openapi.application.ApplicationManager;
import com.intellij.openapi.editor.Editor;
import com.intellij.openapi.fileTypes.FileTypeManager;
import com.intellij.openapi.project.Project;
import dev.lockroom.core.LockroomException;
import dev.lockroom.core.review.ApplyOutcome;
import dev.lockroom.core.review.FileSides;
import dev.lockroom.core.review.SandboxReview;
import dev.lockroom.protocol.FileDiff;
import dev.lockroom.protocol.FileSelection;
import dev.lockroom.protocol.Hunk;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

public final class ReviewDiff {
  private ReviewDiff() {}

  /** Opens `path` of the review's latest view. */
  public static void show(Project project, SandboxReview review, String path) {
    review.sides(path, null).thenCompose(sides -> review.diff(path, sides.viewId()).thenApply(diff -> new Object[] {sides, diff}))
        .whenComplete((pair, e) -> ApplicationManager.getApplication().invokeLater(() -> {
          if (e != null) {
            LockroomProjectService.getInstance(project).notify("Cannot show " + path + ": " + LockroomException.from(e).getMessage(),
                NotificationType.ERROR);
            return;
          }
          open(project, review, (FileSides) pair[0], (FileDiff) pair[1]);
        }));
  }

  private static void open(Project project, SandboxReview review, FileSides sides, FileDiff diff) {
    DiffContentFactory f = DiffContentFactory.getInstance();
    var type = FileTypeManager.getInstance().getFileTypeByFileName(sides.path());
    SimpleDiffRequest request = new SimpleDiffRequest(sides.path() + " in " + review.sandboxId(),
        sides.binary() ? f.createEmpty() : f.create(project, sides.baseText(), type),
        sides.binary() ? f.createEmpty() : f.create(project, sides.currentText(), type),
        "Base (your files when the sandbox started, plus what you applied)", "Sandbox " + review.sandboxId());
    String view = sides.viewId();
    String path = sides.path();
    List<AnAction> actions = List.of(
        action("Apply File", e -> accept(project, review, List.of(FileSelection.builder().path(path).build()), view)),
        action("Reject File", e -> reject(project, review, List.of(FileSelection.builder().path(path).build()), view)),
        action("Apply Hunk at Caret", e -> onHunk(project, e, diff, h -> accept(project, review, hunk(path, h), view))),
        action("Reject Hunk at Caret", e -> onHunk(project, e, diff, h -> reject(project, review, hunk(path, h), view))));
    request.putUserData(DiffUserDataKeys.CONTEXT_ACTIONS, actions);
    DiffManager.getInstance().showDiff(project, request);
  }

  private static List<FileSelection> hunk(String path, Hunk h) {
    return List.of(FileSelection.builder().path(path).hunks(List.of(h.id())).build());
  }

  private static AnAction action(String text, java.util.function.Consumer<AnActionEvent> run) {
    return new AnAction(text) {
      @Override
      public void actionPerformed(AnActionEvent e) {
        run.accept(e);
      }
    };
  }

  /** The hunk under the caret of the sandbox side (the core finds it by line). */
  private static void onHunk(Project project, AnActionEvent e, FileDiff diff, Function<Hunk, CompletableFuture<?>> run) {
    Editor editor = e.getData(CommonDataKeys.EDITOR);
    Hunk h = editor == null ? null : SandboxReview.hunkAtLine(diff, editor.getCaretModel().getLogicalPosition().line + 1);
    if (h == null) {
      LockroomProjectService.getInstance(project).notify("Put the caret on a changed line of the sandbox's side first", NotificationType.INFORMATION);
      return;
    }
    run.apply(h);
  }

  /** Applies `select` from `view` and says what happened; conflicts offer the merge dialog. */
  public static CompletableFuture<ApplyOutcome> accept(Project project, SandboxReview review, List<FileSelection> select, String view) {
    LockroomProjectService service = LockroomProjectService.getInstance(project);
    return review.accept(select, view).whenComplete((o, e) -> {
      if (e != null) {
        service.notify("Nothing applied: " + LockroomException.from(e).getMessage(), NotificationType.ERROR);
        return;
      }
      var n = NotificationGroupManager.getInstance().getNotificationGroup("lockroom")
          .createNotification("lockroom", o.describe(), o.conflicts().isEmpty() ? NotificationType.INFORMATION : NotificationType.WARNING);
      String root = service.workspace();
      for (ApplyOutcome.Conflict c : o.conflicts()) {
        if (root == null) break;
        n.addAction(NotificationAction.createSimpleExpiring("Resolve " + c.path() + " in the merge dialog",
            () -> ConflictMerge.show(project, review, Path.of(root), c.path(), view)));
      }
      n.notify(project);
    });
  }

  public static CompletableFuture<Long> reject(Project project, SandboxReview review, List<FileSelection> select, String view) {
    LockroomProjectService service = LockroomProjectService.getInstance(project);
    return review.reject(select, view).whenComplete((n, e) -> {
      if (e != null) service.notify("Nothing rejected: " + LockroomException.from(e).getMessage(), NotificationType.ERROR);
      else service.notify("Rejected " + n + " change" + (n == 1 ? "" : "s") + " in the sandbox; your files did not change", NotificationType.INFORMATION);
    });
  }
}
