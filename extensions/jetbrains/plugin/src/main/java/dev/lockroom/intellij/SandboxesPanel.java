// SandboxesPanel: the Sandboxes tab: a tree of this project's sandboxes (label, state, why it
// ended) and their processes (command, running or how it exited), rebuilt from the core's
// SandboxesModel when it changes, with the lockroom actions in its toolbar. Selecting a sandbox
// makes it the target of those actions.
package dev.lockroom.intellij;

import com.intellij.openapi.Disposable;
import com.intellij.openapi.actionSystem.ActionGroup;
import com.intellij.openapi.actionSystem.ActionManager;
import com.intellij.openapi.actionSystem.ActionToolbar;
import com.intellij.openapi.application.ApplicationManager;
import com.intellij.openapi.project.Project;
import com.intellij.openapi.ui.SimpleToolWindowPanel;
import com.intellij.ui.ColoredTreeCellRenderer;
import com.intellij.ui.SimpleTextAttributes;
import com.intellij.ui.components.JBScrollPane;
import com.intellij.ui.treeStructure.Tree;
import dev.lockroom.core.SandboxItem;
import dev.lockroom.protocol.ProcessInfo;
import javax.swing.JTree;
import javax.swing.tree.DefaultMutableTreeNode;
import javax.swing.tree.DefaultTreeModel;

final class SandboxesPanel extends SimpleToolWindowPanel implements Disposable {
  private final Project project;
  private final DefaultMutableTreeNode root = new DefaultMutableTreeNode("sandboxes");
  private final DefaultTreeModel treeModel = new DefaultTreeModel(root);
  private final Tree tree = new Tree(treeModel);
  private final Runnable unsubscribe;

  SandboxesPanel(Project project) {
    super(true, true);
    this.project = project;
    LockroomProjectService service = LockroomProjectService.getInstance(project);
    tree.setRootVisible(false);
    tree.setCellRenderer(new Renderer());
    tree.addTreeSelectionListener(e -> {
      Object node = e.getPath() == null ? null : ((DefaultMutableTreeNode) e.getPath().getPathComponent(Math.min(1, e.getPath().getPathCount() - 1))).getUserObject();
      if (node instanceof SandboxItem item) service.select(item.entry().sandboxId());
    });
    ActionToolbar toolbar = ActionManager.getInstance().createActionToolbar("lockroom.Sandboxes",
        (ActionGroup) ActionManager.getInstance().getAction("lockroom.Menu"), true);
    toolbar.setTargetComponent(tree);
    setToolbar(toolbar.getComponent());
    setContent(new JBScrollPane(tree));
    unsubscribe = service.onChange(() -> ApplicationManager.getApplication().invokeLater(this::rebuild, project.getDisposed()));
  }

  private void rebuild() {
    LockroomProjectService service = LockroomProjectService.getInstance(project);
    var c = service.connect();
    if (!c.isDone() || c.isCompletedExceptionally()) return;
    root.removeAllChildren();
    for (SandboxItem item : c.join().model().list()) {
      DefaultMutableTreeNode node = new DefaultMutableTreeNode(item);
      for (ProcessInfo p : item.processes()) node.add(new DefaultMutableTreeNode(p));
      root.add(node);
    }
    treeModel.reload();
    for (int i = 0; i < tree.getRowCount(); i++) tree.expandRow(i);
  }

  @Override
  public void dispose() {
    unsubscribe.run();
  }

  private static final class Renderer extends ColoredTreeCellRenderer {
    @Override
    public void customizeCellRenderer(JTree tree, Object value, boolean selected, boolean expanded, boolean leaf, int row, boolean hasFocus) {
      Object o = ((DefaultMutableTreeNode) value).getUserObject();
      if (o instanceof SandboxItem item) {
        append(item.title());
        append("  " + item.entry().sandboxId() + (item.entry().workspace() != null ? "  " + item.entry().workspace() : ""),
            SimpleTextAttributes.GRAYED_ATTRIBUTES);
        if (item.ended() != null) append("  " + item.ended(), SimpleTextAttributes.ERROR_ATTRIBUTES);
      } else if (o instanceof ProcessInfo p) {
        append(String.join(" ", p.argv()));
        String state = p.running() ? "running" : p.exit() == null ? "ended"
            : p.exit().signal() != null ? "ended by " + p.exit().signal() : "exited " + p.exit().exitCode();
        append("  " + p.processId() + " " + (p.pty() ? "pty, " : "") + state, SimpleTextAttributes.GRAYED_ATTRIBUTES);
      }
    }
  }
}
