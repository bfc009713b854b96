// DestroyAction: ends the targeted sandbox (sandbox/destroy) after asking; changes not applied
// are lost with it.
package dev.lockroom.intellij.actions;

import com.intellij.notification.NotificationType;
import com.intellij.openapi.application.ApplicationManager;
import com.intellij.openapi.project.Project;
import com.intellij.openapi.ui.Messages;
import dev.lockroom.core.LockroomException;
import dev.lockroom.intellij.LockroomProjectService;

public final class DestroyAction extends LockroomAction {
  @Override
  void run(Project project, LockroomProjectService service, LockroomProjectService.Connection c) {
    String id = target(service, c);
    if (id == null) return;
    ApplicationManager.getApplication().invokeLater(() -> {
      if (Messages.showYesNoDialog(project, "Destroy " + id + "? Changes not applied are lost.", "Destroy Sandbox", null) != Messages.YES) return;
      c.model().destroy(id).whenComplete((x, e) -> {
        if (e != null) service.notify("Cannot destroy " + id + ": " + LockroomException.from(e).getMessage(), NotificationType.ERROR);
      });
    });
  }
}
