// LockroomAction: what every lockroom action shares: run off the EDT with the connection, on the
// sandbox the user targets (selected in the tool window, else the only live one), and failures
// said in one notification with lockroom's own message.
package dev.lockroom.intellij.actions;

import com.intellij.notification.NotificationType;
import com.intellij.openapi.actionSystem.ActionUpdateThread;
import com.intellij.openapi.actionSystem.AnAction;
import com.intellij.openapi.actionSystem.AnActionEvent;
import com.intellij.openapi.project.DumbAware;
import com.intellij.openapi.project.Project;
import dev.lockroom.core.LockroomException;
import dev.lockroom.intellij.LockroomProjectService;

abstract class LockroomAction extends AnAction implements DumbAware {
  @Override
  public ActionUpdateThread getActionUpdateThread() {
    return ActionUpdateThread.BGT;
  }

  @Override
  public void update(AnActionEvent e) {
    e.getPresentation().setEnabled(e.getProject() != null);
  }

  @Override
  public final void actionPerformed(AnActionEvent e) {
    Project project = e.getProject();
    if (project == null) return;
    LockroomProjectService service = LockroomProjectService.getInstance(project);
    service.connect().whenComplete((c, err) -> {
      if (err != null) {
        service.notify("Cannot start lockroom: " + LockroomException.from(err).getMessage(), NotificationType.ERROR);
        return;
      }
      run(project, service, c);
    });
  }

  /** Runs off the EDT. */
  abstract void run(Project project, LockroomProjectService service, LockroomProjectService.Connection c);

  /** The targeted sandbox, or null after telling the user to pick one. */
  static String target(LockroomProjectService service, LockroomProjectService.Connection c) {
    String id = service.target(c);
    if (id == null) service.notify("Select a sandbox in the lockroom tool window first", NotificationType.INFORMATION);
    return id;
  }
}
