// GuestTerminal: a terminal tab in the lockroom tool window whose process is a pty in a guest —
// what "Run Agent in Sandbox" opens. The platform's JBTerminalWidget renders it; the core's
// GuestProcess (through GuestTtyConnector) is its process. Closing the tab hangs it up.
package dev.lockroom.intellij;

import com.intellij.openapi.Disposable;
import com.intellij.openapi.application.ApplicationManager;
import com.intellij.openapi.project.Project;
import com.intellij.openapi.util.Disposer;
import com.intellij.openapi.wm.ToolWindow;
import com.intellij.openapi.wm.ToolWindowManager;
import com.intellij.terminal.JBTerminalSystemSettingsProviderBase;
import com.intellij.terminal.JBTerminalWidget;
import com.intellij.ui.content.Content;
import com.intellij.ui.content.ContentFactory;
import dev.lockroom.core.GuestProcess;

public final class GuestTerminal {
  private GuestTerminal() {}

  /** Opens `process` (started with a pty) in a new tab titled `title`; call on the EDT. */
  public static void open(Project project, GuestProcess process, String title) {
    ApplicationManager.getApplication().assertIsDispatchThread();
    ToolWindow window = ToolWindowManager.getInstance(project).getToolWindow("lockroom");
    if (window == null) return;
    Disposable lifetime = Disposer.newDisposable("lockroom terminal " + process.processId());
    JBTerminalWidget widget = new JBTerminalWidget(project, new JBTerminalSystemSettingsProviderBase(), lifetime);
    GuestTtyConnector tty = new GuestTtyConnector(process, title);
    widget.createTerminalSession(tty);
    widget.start();
    Content content = ContentFactory.getInstance().createContent(widget.getComponent(), title, false);
    content.setDisposer(() -> {
      tty.close();
      Disposer.dispose(lifetime);
    });
    window.getContentManager().addContent(content);
    window.getContentManager().setSelectedContent(content);
    window.activate(null);
    process.exited().thenAccept(exit -> ApplicationManager.getApplication().invokeLater(() -> {
      String how = exit.signal() != null ? "ended by " + exit.signal() : "exited with " + exit.exitCode();
      content.setDisplayName(title + " (" + how + ")");
    }));
  }
}
