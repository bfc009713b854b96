// NewSandboxAction: a sandbox on this project's folder with the settings' kits, size and
// network, its start shown as a cancellable background task (SandboxStarter).
package dev.lockroom.intellij.actions;

import com.intellij.openapi.project.Project;
import dev.lockroom.intellij.LockroomProjectService;
import dev.lockroom.intellij.SandboxStarter;

public final class NewSandboxAction extends LockroomAction {
  @Override
  void run(Project project, LockroomProjectService service, LockroomProjectService.Connection c) {
    SandboxStarter.start(project, null);
  }
}
