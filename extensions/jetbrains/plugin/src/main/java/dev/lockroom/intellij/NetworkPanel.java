// NetworkPanel: the Network tab: every connection the sandboxes' programs made through
// lockroom's policy proxy, one row per (sandbox, connection, request) — opened by its first
// network/event and finished by its `close` — with the decision, rule, approval and bytes,
// from the core's SandboxesModel.
package dev.lockroom.intellij;

import com.intellij.openapi.Disposable;
import com.intellij.openapi.application.ApplicationManager;
import com.intellij.openapi.project.Project;
import com.intellij.ui.components.JBScrollPane;
import com.intellij.ui.table.JBTable;
import dev.lockroom.core.SandboxItem;
import dev.lockroom.protocol.NetworkEventParams;
import java.awt.BorderLayout;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.swing.JPanel;
import javax.swing.table.DefaultTableModel;

final class NetworkPanel extends JPanel implements Disposable {
  private static final String[] kColumns = {"Sandbox", "Time", "Decision", "Host", "Request", "Rule", "Asked", "Up", "Down", "Program", "Reason"};
  private final Project project;
  private final DefaultTableModel table = new DefaultTableModel(kColumns, 0) {
    @Override
    public boolean isCellEditable(int row, int column) {
      return false;
    }
  };
  private final Runnable unsubscribe;

  NetworkPanel(Project project) {
    super(new BorderLayout());
    this.project = project;
    add(new JBScrollPane(new JBTable(table)), BorderLayout.CENTER);
    unsubscribe = LockroomProjectService.getInstance(project)
        .onChange(() -> ApplicationManager.getApplication().invokeLater(this::rebuild, project.getDisposed()));
  }

  private void rebuild() {
    var c = LockroomProjectService.getInstance(project).connect();
    if (!c.isDone() || c.isCompletedExceptionally()) return;
    table.setRowCount(0);
    for (SandboxItem item : c.join().model().list()) {
      Map<String, NetworkEventParams> rows = new LinkedHashMap<>();
      for (NetworkEventParams e : item.network()) rows.put(e.connectionId() + "/" + e.request(), e); // the latest phase wins
      for (NetworkEventParams e : rows.values()) {
        String open = e.phase() == NetworkEventParams.Phase.CLOSE ? "" : " (open)";
        table.addRow(new Object[] {item.title(), e.time(), e.decision().wire() + open, e.host() + ":" + e.port(),
            (e.method() != null ? e.method() + " " : "") + (e.path() != null ? e.path() : e.scheme()), e.rule(),
            e.approval() == null ? "" : e.approval().wire(), e.bytesUp(), e.bytesDown(), e.process() == null ? "" : e.process().command(),
            e.reason() == null ? "" : e.reason()});
      }
    }
  }

  @Override
  public void dispose() {
    unsubscribe.run();
  }
}
