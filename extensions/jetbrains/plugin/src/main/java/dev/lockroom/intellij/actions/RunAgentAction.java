// RunAgentAction: "Run Agent in Sandbox": asks for the command (the settings' default: an agent
// CLI, or a shell), starts a new sandbox on this project, runs the command there on a pty and
// opens it as a terminal tab (GuestTerminal). Whatever it changes comes back as a review.
package dev.lockroom.intellij.actions;

import com.intellij.notification.NotificationType;
import com.intellij.openapi.application.ApplicationManager;
import com.intellij.openapi.project.Project;
import com.intellij.openapi.ui.Messages;
import com.intellij.util.execution.ParametersListUtil;
import dev.lockroom.core.LockroomException;
import dev.lockroom.intellij.GuestTerminal;
import dev.lockroom.intellij.LockroomProjectService;
import dev.lockroom.intellij.LockroomSettings;
import dev.lockroom.intellij.SandboxStarter;
import dev.lockroom.protocol.ProcessStartParams;
import java.util.List;

public final class RunAgentAction extends LockroomAction {
  @Override
  void run(Project project, LockroomProjectService service, LockroomProjectService.Connection c) {
    ApplicationManager.getApplication().invokeLater(() -> {
      String command = Messages.showInputDialog(project, "Command to run on a terminal in a new sandbox:", "Run Agent in Sandbox", null,
          LockroomSettings.getInstance().getState().agentCommand, null);
      if (command == null || command.isBlank()) return;
      List<String> argv = ParametersListUtil.parse(command);
      SandboxStarter.start(project, "IntelliJ: " + argv.get(0))
          .thenCompose(created -> c.hub().start(ProcessStartParams.builder().sandboxId(created.sandboxId()).argv(argv)
              .pty(ProcessStartParams.Pty.builder().cols(120).rows(40).build()).build()))
          .whenComplete((process, e) -> ApplicationManager.getApplication().invokeLater(() -> {
            if (e != null) {
              LockroomException le = LockroomException.from(e);
              if (le.kind() != dev.lockroom.core.ErrorKind.CANCELLED) service.notify("Cannot run " + command + ": " + le.getMessage(), NotificationType.ERROR);
              return;
            }
            GuestTerminal.open(project, process, argv.get(0) + " @ " + process.sandboxId());
          }));
    });
  }
}
