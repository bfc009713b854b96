// LockroomConfigurable: the settings page (Settings | Tools | lockroom), a form over
// LockroomSettings.Data. A change takes effect for the next connection and the next sandbox.
package dev.lockroom.intellij;

import com.intellij.openapi.options.Configurable;
import com.intellij.ui.components.JBCheckBox;
import com.intellij.ui.components.JBTextField;
import com.intellij.util.ui.FormBuilder;
import javax.swing.JComponent;
import javax.swing.JSpinner;
import javax.swing.SpinnerNumberModel;

public final class LockroomConfigurable implements Configurable {
  private final JBTextField path = new JBTextField();
  private final JBTextField serverArgs = new JBTextField();
  private final JBTextField kits = new JBTextField();
  private final JSpinner cpus = new JSpinner(new SpinnerNumberModel(2, 1, 64, 1));
  private final JSpinner memory = new JSpinner(new SpinnerNumberModel(1024, 128, 1 << 20, 128));
  private final JBTextField allow = new JBTextField();
  private final JBCheckBox ask = new JBCheckBox("Ask about hosts no rule allows (else deny them)");
  private final JBTextField agent = new JBTextField();

  @Override
  public String getDisplayName() {
    return "lockroom";
  }

  @Override
  public JComponent createComponent() {
    return FormBuilder.createFormBuilder()
        .addLabeledComponent("lockroom binary:", path)
        .addLabeledComponent("Extra 'serve' arguments:", serverArgs)
        .addSeparator()
        .addLabeledComponent("Kits for new sandboxes:", kits)
        .addLabeledComponent("vCPUs:", cpus)
        .addLabeledComponent("Memory (MiB):", memory)
        .addLabeledComponent("Allowed hosts (host or host:port):", allow)
        .addComponent(ask)
        .addSeparator()
        .addLabeledComponent("Run Agent in Sandbox runs:", agent)
        .addComponentFillVertically(new javax.swing.JPanel(), 0)
        .getPanel();
  }

  private static LockroomSettings.Data stored() {
    return LockroomSettings.getInstance().getState();
  }

  @Override
  public boolean isModified() {
    LockroomSettings.Data d = stored();
    return !path.getText().equals(d.path) || !serverArgs.getText().equals(d.serverArgs) || !kits.getText().equals(d.kits)
        || (int) cpus.getValue() != d.cpus || (int) memory.getValue() != d.memoryMiB || !allow.getText().equals(d.allow)
        || ask.isSelected() != d.ask || !agent.getText().equals(d.agentCommand);
  }

  @Override
  public void apply() {
    LockroomSettings.Data d = stored();
    d.path = path.getText().trim().isEmpty() ? "lockroom" : path.getText().trim();
    d.serverArgs = serverArgs.getText();
    d.kits = kits.getText();
    d.cpus = (int) cpus.getValue();
    d.memoryMiB = (int) memory.getValue();
    d.allow = allow.getText();
    d.ask = ask.isSelected();
    d.agentCommand = agent.getText();
  }

  @Override
  public void reset() {
    LockroomSettings.Data d = stored();
    path.setText(d.path);
    serverArgs.setText(d.serverArgs);
    kits.setText(d.kits);
    cpus.setValue(d.cpus);
    memory.setValue(d.memoryMiB);
    allow.setText(d.allow);
    ask.setSelected(d.ask);
    agent.setText(d.agentCommand);
  }
}
