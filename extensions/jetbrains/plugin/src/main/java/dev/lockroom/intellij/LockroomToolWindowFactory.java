// LockroomToolWindowFactory: the lockroom tool window: a Sandboxes tab (sandboxes and their
// processes) and a Network tab (each sandbox's connections and decisions); guest terminals open
// as further tabs (GuestTerminal). Opening it connects, which re-attaches this project's
// detached sandboxes.
package dev.lockroom.intellij;

import com.intellij.notification.NotificationType;
import com.intellij.openapi.project.DumbAware;
import com.intellij.openapi.project.Project;
import com.intellij.openapi.util.Disposer;
import com.intellij.openapi.wm.ToolWindow;
import com.intellij.openapi.wm.ToolWindowFactory;
import com.intellij.ui.content.Content;
import com.intellij.ui.content.ContentFactory;
import dev.lockroom.core.LockroomException;

public final class LockroomToolWindowFactory implements ToolWindowFactory, DumbAware {
  @Override
  public void createToolWindowContent(Project project, ToolWindow toolWindow) {
    ContentFactory factory = ContentFactory.getInstance();
    SandboxesPanel sandboxes = new SandboxesPanel(project);
    Content s = factory.createContent(sandboxes, "Sandboxes", false);
    s.setCloseable(false);
    Disposer.register(s, sandboxes);
    toolWindow.getContentManager().addContent(s);
    NetworkPanel network = new NetworkPanel(project);
    Content n = factory.createContent(network, "Network", false);
    n.setCloseable(false);
    Disposer.register(n, network);
    toolWindow.getContentManager().addContent(n);
    LockroomProjectService service = LockroomProjectService.getInstance(project);
    service.connect().whenComplete((c, e) -> {
      if (e != null) service.notify("Cannot start lockroom: " + LockroomException.from(e).getMessage(), NotificationType.ERROR);
    });
  }
}
